"""Every format, in the order docs/FORMATS.md lists them: "module:Class" names, imported on demand.

Add a line here when you add a format; tests/formats checks that each one imports, has a
SCHEMA_VERSION, a FILE description and a migration test, and that docs/FORMATS.md is current.
"""

from __future__ import annotations

FORMATS: tuple[str, ...] = (
    "vignette_bench.formats.pair_config:PairConfig",
    "vignette_bench.formats.selection:SelectionRecord",
    "vignette_bench.formats.run_record:RunRecord",
    "vignette_bench.formats.news:NewsAnswer",
    "vignette_bench.formats.news:NewsJudgement",
    "vignette_bench.formats.news:NewsProvenance",
    "vignette_bench.formats.news:JudgeSpec",
    "vignette_bench.formats.render_record:RenderRecord",
    "vignette_bench.formats.entry:Entry",
    "vignette_bench.formats.verification:Verification",
    "vignette_bench.formats.verification:MaintainerKeys",
    "vignette_bench.formats.annotation:AnnotationItems",
    "vignette_bench.formats.annotation:AnnotationAnswers",
)
