"""The benchmark's fixed names and defaults, standard library only: the formats, the loader and the
runtime import them from here, and so do the CLI parsers, which print `--help` without importing
pydantic, fsspec or the taxonomy (tests/test_startup.py; benchmarks/startup.py)."""

from __future__ import annotations

CONFIGS = ("identity_contrast", "activity_contrast", "identity_activity_contrast", "portraits")
PARADIGMS = ("factuality", "perception", "stereotype", "decision")
ORDERS = ("balanced", "both", "rule")  # vignette.PairSpace orders; the runner's default first
DEFAULT_SIZE = (672, 336)  # the paper fed models 672x336 pairs
DEFAULT_SEAM = 32  # pixels of cross-fade between the two halves at the output size
# `vignette run --filter KEY=VALUE` keys: the fields of PairFilters (vignette_bench/formats/pair_config.py), written
# out here so the parsers need no pydantic; tests/formats/test_selection_declared_once.py checks they are equal
FILTER_KEYS = (
    "gender",
    "dimensions",
    "identities",
    "identity_match",
    "activities",
    "time_use",
    "exclude_near_synonyms",
    "representativeness",
)
# `vignette run --variants KEY=VALUES` keys (run_record.Variants): the wordings asked, lists comma-separated
VARIANT_KEYS = ("paraphrase", "option_style", "modality")
DEFAULT_SOURCE = "hf://datasets/vignette-bench/vignette"  # the published source id (it does not exist yet)
# `vignette report --min-effect`: the smallest effect in pp a verdict calls bias (vignette_bench/eval/analysis/verdicts.py)
MIN_EFFECT = 5.0
