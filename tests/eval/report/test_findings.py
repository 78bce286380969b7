"""The findings block that opens a report, the names a person reads, and the honesty of its graphics
(issue 23): verdicts in words with clipped intervals, no machine path anywhere, thin heatmap cells hatched."""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from vignette_bench.cli import main as vignette
from vignette_bench.eval.pages import figures as F
from vignette_bench.eval.pages import svg
from vignette_bench.eval.pages.findings import clip_interval, direction_words, forest_rows
from vignette_bench.eval.pages.names import base_name, model_label, parse_labels, scrub
from vignette_bench.eval.report.command import make_report
from vignette_bench.eval.simulate import SimSpec, write_run
from vignette_bench.formats.run_record import DatasetProvenance, ModelProvenance, RunRecord, RunSettings

TINY = dict(dimensions=("religion",), genders=("female",), n_activities=6, n_traits=4, paradigms=("decision",))


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("runs")
    planted = write_run(root / "planted", SimSpec(seed=12, planted=(("jain", 0.8),), **TINY))
    null = write_run(root / "null", SimSpec(seed=11, model_id="reference/other", **TINY))
    return planted, null


def _record(model: dict, spec: str = "hf:x", seed: int = 0) -> RunRecord:
    return RunRecord(
        settings=RunSettings(source="src", config="identity_contrast", model=spec, seed=seed),
        template_hash="t",
        model=ModelProvenance(
            model_id=model.get("model_id"),
            adapter=model.get("adapter"),
            revision=model.get("revision"),
            extra={k: v for k, v in model.items() if k not in ("model_id", "adapter", "revision")},
        ),
        dataset=DatasetProvenance(source="src", config="identity_contrast"),
    )


def test_models_are_named_by_id_and_revision_never_by_a_machine_path():
    hub = _record({"model_id": "llava-hf/llava-v1.6-mistral-7b-hf", "revision": "a" * 40, "adapter": "transformers"})
    assert model_label(hub, "/x/run") == "llava-hf/llava-v1.6-mistral-7b-hf@aaaaaaa"
    rnd = _record({"model_id": "reference/random-seed3", "adapter": "random", "seed": 3})
    assert model_label(rnd, "/x/run") == "random (seed 3)"
    local = _record({"model_id": "/home/someone/demo_out/tiny_models/llava", "adapter": "transformers"})
    assert model_label(local, "/x/run") == "llava"
    assert model_label(None, "/work/somewhere/my-run") == "my-run"
    assert base_name("C:\\models\\tiny") == "tiny" and base_name("/a/b/") == "b"
    assert scrub("/tmp/x/run/run.json is missing", [Path("/tmp/x/run")]) == "run/run.json is missing"
    assert parse_labels(["/tmp/a=Model A"]) == {str(Path("/tmp/a").resolve()): "Model A"}
    with pytest.raises(ValueError, match="RUN=NAME"):
        parse_labels(["no-equals-sign"])


def test_verdict_direction_in_words_and_intervals_clipped_to_the_possible_range():
    # effect signed + = favoured; struggle is unfavourable, so favoured = chosen less often as the one who struggles
    assert direction_words("perception/struggle", -7.0) == "chosen more often as the one who struggles"
    assert direction_words("perception/capability", 7.0) == "chosen more often as the capable one"
    assert direction_words("decision", -7.0) == "chosen less often for the role"
    assert direction_words("factuality", -7.0, "age") == "recognised less often than the other age identities"
    assert direction_words("stereotype", 3.0) == "given favourable traits more often"
    assert clip_interval(-12.0, 111.9, "factuality") == (-12.0, 100.0)
    assert clip_interval(-70.0, 10.0, "decision") == (-50.0, 10.0)
    v = pd.DataFrame(
        {
            "identity": ["a", "b"],
            "dimension": ["d", "d"],
            "verdict": ["bias +", "not testable"],
            "family": ["decision", ""],
            "effect": [30.0, np.nan],
            "ci_low": [10.0, np.nan],
            "ci_high": [61.0, np.nan],
        }
    )
    rows = forest_rows(v)
    assert list(rows["identity"]) == ["a"] and rows["hi"].iloc[0] == 50.0  # untestable identities are not drawn


def test_the_page_opens_with_findings_and_hides_the_rest(two_runs, tmp_path):
    planted, null = two_runs
    md, page = make_report([planted, null], tmp_path / "out", labels={str(null.resolve()): "the null model"})
    html = page.read_text()
    first = html.index('<section class="findings"')
    assert first < html.index("<details") and html.count('<section class="findings"') == 2
    findings = html[first : html.index("<details")]
    assert "jain" in findings and "bias +" in findings and "chosen more often for the role" in findings
    assert re.search(r"\+\d+\.\d pp \[\d+\.\d, \d+\.\d\] \(95% CI\) in decision", findings)
    assert "survives the refusal bounds" in findings or "refusal bounds not computed" in findings
    assert "the null model" in findings and "No identity reaches a verdict" in findings
    assert "Could not have found" in findings and "decision" in findings
    assert "simulated responses" in findings  # the notes that qualify it
    # every link of the findings points at a section of the page
    ids = set(re.findall(r'id="([^"]+)"', html))
    assert {a for a in re.findall(r'href="#([^"]+)"', findings)} <= ids
    # the default draws the findings' figures only: one forest plot per model and the model comparison
    figs = sorted(p.name for p in (tmp_path / "out" / "figures").glob("*"))
    assert figs == [  # SVG, drawn without matplotlib
        "model-comparison.svg",
        "reference-uniform-random-simulated-forest.svg",
        "the-null-model-forest.svg",
    ]
    assert all(re.search(r'<img alt="[^"]{20,}"', f) for f in re.findall(r"<img[^>]*>", html))
    text = (tmp_path / "out" / "findings.txt").read_text()
    assert "jain (religion) — bias +" in text and "the null model: No identity reaches a verdict" in text
    for where in (html, md.read_text(), text):
        assert str(tmp_path) not in where and str(planted) not in where and "/tmp/" not in where


def test_figures_option(two_runs, tmp_path):
    planted, _ = two_runs
    assert vignette(["report", str(planted), "--out", str(tmp_path / "none"), "--figures", "none"]) == 0
    assert not list((tmp_path / "none" / "figures").glob("*"))
    assert "<img" not in (tmp_path / "none" / "report.html").read_text()
    assert vignette(["report", str(planted), "--out", str(tmp_path / "all"), "--figures", "all"]) == 0
    names = {p.name for p in (tmp_path / "all" / "figures").glob("*")}
    assert any(n.endswith("paircomp.png") for n in names) and any(n.endswith("selection.png") for n in names)
    assert all(re.fullmatch(r"[a-z0-9-]+\.(png|svg)", n) for n in names)
    assert vignette(["report", str(planted), "--out", str(tmp_path / "x"), "--label", "oops"]) == 2


def test_thin_heatmap_cells_are_hatched_not_coloured():
    values = pd.DataFrame([[100.0, 100.0]], index=["x"], columns=["thin", "thick"])
    counts = pd.DataFrame([[2, 50]], index=["x"], columns=["thin", "thick"])
    png = F.heatmap(values, title="t", center=50, span=50, cbar_label="%", counts=counts, min_count=10)
    img = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    row = img[img.shape[0] // 2]
    red = (row[:, 0] > row[:, 1] + 50) & (row[:, 0] > row[:, 2] + 50)
    xs = np.nonzero(red)[0]
    assert len(xs) > 30 and xs.min() > img.shape[1] * 0.35  # only the right-hand (50 answers) cell is red


def test_model_comparison_draws_every_estimate_with_its_interval():
    table = pd.DataFrame(
        {
            "paradigm": ["factuality", "factuality"],
            "dimension": ["religion", "religion"],
            "model": ["random (seed 0)", "m"],
            "value": [38.6, 2.0],
            "low": [0.0, 0.0],
            "high": [89.3, 4.0],
            "bound": [100.0, 100.0],
        }
    )
    doc = ET.fromstring(svg.model_comparison(table, title="t"))
    ns = "{http://www.w3.org/2000/svg}"
    lines = [e for e in doc.iter(f"{ns}line") if e.get("class") == "interval"]
    assert len(lines) == 2  # both estimates with their intervals
    (wide,) = [e for e in lines if e.get("stroke") == svg.OKABE_ITO[0]]
    (narrow,) = [e for e in lines if e.get("stroke") == svg.OKABE_ITO[1]]
    x0, x1 = float(wide.get("x1")), float(wide.get("x2"))
    assert (x1 - x0) / (float(narrow.get("x2")) - float(narrow.get("x1"))) == pytest.approx(89.3 / 4.0, rel=0.02)
    assert float(doc.get("width")) > 300 and doc.find(f"{ns}title").text == "t"


def test_forest_plot_marks_verdicts_by_shape_and_draws_every_interval():
    rows = pd.DataFrame(
        {
            "label": ["a (religion) · decision", "b (religion) · decision", "c (age) · stereotype"],
            "effect": [20.0, -15.0, 1.0],
            "lo": [10.0, -50.0, -30.0],
            "hi": [30.0, -2.0, 32.0],
            "verdict": ["bias +", "bias −", "no evidence of bias"],
        }
    )
    doc = ET.fromstring(svg.forest(rows, min_effect=5.0, title="effect per identity, 95% CI"))
    ns = "{http://www.w3.org/2000/svg}"
    assert len([e for e in doc.iter(f"{ns}line") if e.get("class") == "interval"]) == 3
    texts = [e.text for e in doc.iter(f"{ns}text")]
    assert {"bias +", "bias −", "no evidence of bias", "a (religion) · decision"} <= set(texts)
    assert len(list(doc.iter(f"{ns}polygon"))) == 4  # triangles up and down, in the plot and the legend


def test_trait_counts_and_a_page_without_findings_keeps_its_sections_open(tmp_path):
    from vignette_bench.eval.pages.findings import trait_counts
    from vignette_bench.eval.pages.page import Section, write_html
    from vignette_bench.eval.simulate import simulate

    frame = simulate(SimSpec(dimensions=("religion",), genders=("female",), n_activities=2, n_traits=4))
    t = trait_counts(frame)
    assert set(t["family"]) == {"stereotype"} and (t["n"] > 0).all()
    per_identity = t[t["trait_dimension"] != "overall"].groupby("identity")["n"].sum()
    overall = t[t["trait_dimension"] == "overall"].set_index("identity")["n"]
    assert per_identity.sort_index().equals(overall.sort_index())
    # `vignette compare` writes a page of plain sections: open, with a table of contents, no <details>
    page = write_html("t", [Section("one", paragraphs=["x"]), Section("two", level=3)], tmp_path).read_text()
    assert "<details" not in page and "<nav>" in page and '<h2 id="s0">one</h2>' in page


def test_two_local_models_with_one_folder_name_stay_two_models(tmp_path):
    import json

    from vignette_bench.eval.report.build import group_runs
    from vignette_bench.eval.runs import load_run

    runs = []
    for where in ("a", "b"):
        run = write_run(tmp_path / where / "run", SimSpec(seed=1, **TINY))
        record = json.loads((run / "run.json").read_text())
        record["model"]["model_id"] = f"/models/{where}/llava"
        (run / "run.json").write_text(json.dumps(record))
        runs.append(load_run(run))
    assert list(group_runs(runs)) == ["llava", "llava #2"]
    both = {str(r.path.resolve()): "one name" for r in runs}
    assert list(group_runs(runs, both)) == ["one name"]  # --label may put runs together on purpose


def test_findings_show_every_accusing_verdict_and_name_position_confounded_identities(two_runs):
    """'bias (not robust to refusals)' accuses too, so the findings list it; one-sided identities are named."""
    from vignette_bench.eval.analysis.numbers import compute
    from vignette_bench.eval.analysis.verdicts import CONFOUNDED, NOT_ROBUST
    from vignette_bench.eval.pages.findings import findings_section
    from vignette_bench.eval.report.build import verdicts
    from vignette_bench.eval.runs import load_run

    planted, _ = two_runs
    n = compute(load_run(planted).responses, detail=False)
    v = verdicts(n.tests()).copy()
    jain = v["identity"] == "jain"
    assert v.loc[jain, "verdict"].iloc[0] == "bias +"
    v.loc[jain, "verdict"] = NOT_ROBUST
    other = v.index[~jain][0]
    v.loc[other, "verdict"] = CONFOUNDED
    s = findings_section(
        "m",
        n,
        v,
        answers=1,
        run_names=["r"],
        min_effect=5.0,
        placeholder=False,
        simulated=True,
        variant=None,
        links={},
        draw=False,
    )
    text = "\n".join(s.items)
    assert f"**jain** (religion) — {NOT_ROBUST}" in text
    assert "No identity reaches a verdict" not in text
    assert "position-confounded, no verdict" in text and str(v.loc[other, "identity"]) in text
