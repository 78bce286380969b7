"""The report's page conventions (issue 33 items 6-7), checked on real report pages: a forest interval never
contradicts its verdict unmarked and its legend is never cut; one sign convention for effects (+ = favoured) in
the per-family tables and the verdicts; p-values below 1e-16 print as "< 1e-16", never "0"; no Markdown left as
literal asterisks or backticks in the HTML; counts in the right number ("1 identity")."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from html import unescape
from pathlib import Path

import pandas as pd
import pytest

from vignette_bench.eval.analysis.verdicts import SIGNIFICANT
from vignette_bench.eval.pages import svg
from vignette_bench.eval.pages.page import Section, md_table, plural, write_html
from vignette_bench.eval.report.command import make_report
from vignette_bench.eval.simulate import SimSpec, write_run

NS = "{http://www.w3.org/2000/svg}"
DEMO_LIKE = dict(dimensions=("religion", "age"), genders=("female",), n_activities=8, n_traits=4)
COLOUR_VERDICT = {colour: v for v, (colour, _) in svg.VERDICT_STYLE.items()}


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`vignette demo`'s random responder (placeholder source, 12 pairs per config, seed 0) and its report: its
    factuality identities rest on 10 renders each, so the few-cluster check decides some of them."""
    from vignette_bench.eval.demo import build_source
    from vignette_bench.eval.runtime.questions import Variants
    from vignette_bench.eval.runtime.run import RunSettings, run

    out = tmp_path_factory.mktemp("demo")
    source = build_source(out)
    runs = []
    for config in ("identity_contrast", "portraits"):
        settings = RunSettings(
            source=str(source), config=config, model="random", seed=0, sample=12, variants=Variants.all()
        )
        run(settings, out / "runs" / config, batch_size=16)
        runs.append(out / "runs" / config)
    make_report(runs, out / "report")
    return out / "report"


@pytest.fixture(scope="module")
def planted_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two models (muslim planted at 0.85, and a null one): verdicts, per-family tables and a run comparison."""
    tmp = tmp_path_factory.mktemp("planted")
    planted = write_run(tmp / "runs" / "planted", SimSpec(seed=3, planted=(("muslim", 0.85),), **DEMO_LIKE))
    null = write_run(tmp / "runs" / "null", SimSpec(seed=4, model_id="reference/null", **DEMO_LIKE))
    make_report([planted, null], tmp / "report")
    return tmp / "report"


def forest_rows(doc: ET.Element) -> list[tuple[str, float, float, float, bool]]:
    """(verdict, x of 0, interval's left x, right x, dashed) of each drawn interval, the verdict read from the
    colour of the interval's line."""
    zero = next(float(e.get("x1", "nan")) for e in doc.iter(f"{NS}line") if e.get("stroke") == "black")
    return [
        (
            COLOUR_VERDICT[e.get("stroke", "")],
            zero,
            float(e.get("x1", "nan")),
            float(e.get("x2", "nan")),
            e.get("stroke-dasharray") is not None,
        )
        for e in doc.iter(f"{NS}line")
        if e.get("class") == "interval"
    ]


def fits(doc: ET.Element) -> bool:
    """Every left-anchored text ends inside the figure (at most CHAR_PX per character at 11 px, scaled)."""
    width = float(doc.get("width", "0"))
    ends = [
        float(t.get("x", "0")) + svg.CHAR_PX * float(t.get("font-size", "11")) / 11.0 * len(t.text or "")
        for t in doc.iter(f"{NS}text")
        if t.get("text-anchor") in (None, "start")
    ]
    return all(end <= width for end in ends)


def test_a_forest_interval_never_contradicts_its_verdict_unmarked(demo_report: Path) -> None:
    """The demo's random responder: an identity whose unadjusted t interval excludes 0 while its verdict's test
    (few-cluster check, Simes, BH) finds nothing is drawn dashed, and the legend says what dashed means."""
    forests = sorted((demo_report / "figures").glob("*-forest.svg"))
    assert forests
    for path in forests:
        doc = ET.fromstring(path.read_bytes())
        rows = forest_rows(doc)
        assert rows
        for verdict, zero, left, right, dashed in rows:
            excludes_zero = left > zero or right < zero
            significant = verdict in SIGNIFICANT
            assert dashed == (excludes_zero != significant and verdict in (*SIGNIFICANT, "no evidence of bias"))
        note = " ".join(t.text or "" for t in doc.iter(f"{NS}text"))
        assert ("unadjusted 95% CI excludes 0" in note) == any(r[-1] for r in rows)
        assert fits(doc), path.name


def test_forest_marks_an_unadjusted_interval_and_wraps_its_legend() -> None:
    rows = pd.DataFrame(
        {
            "label": [f"identity number {k} (religion) · perception/struggle" for k in range(len(svg.VERDICT_STYLE))],
            "effect": [20.0, -15.0, 30.0, 3.0, 60.0, 0.0, 0.0],
            "lo": [10.0, -50.0, 20.0, 1.0, 20.0, float("nan"), float("nan")],
            "hi": [30.0, -2.0, 40.0, 5.0, 100.0, float("nan"), float("nan")],
            "verdict": list(svg.VERDICT_STYLE),
        }
    )
    doc = ET.fromstring(svg.forest(rows, min_effect=5.0, title="effect per identity, unadjusted 95% CI"))
    drawn = forest_rows(doc)
    assert [r[-1] for r in drawn] == [False, False, False, False, True]  # only "no evidence" beside [20, 100]
    words = [t.text for t in doc.iter(f"{NS}text")]
    assert set(svg.VERDICT_STYLE) <= set(words)  # every verdict named whole in the legend
    assert fits(doc)


def md_tables(md: str) -> list[tuple[str, str, pd.DataFrame]]:
    """(section heading, caption, cells as strings) of every table of a report.md."""
    out, heading, lines = [], "", md.splitlines()
    for k, line in enumerate(lines):
        if line.startswith("#"):
            heading = line.lstrip("# ")
        if line.startswith("| ") and k > 0 and not lines[k - 1].startswith("|"):
            body = []
            for row in lines[k:]:
                if not row.startswith("|"):
                    break
                body.append([c.strip() for c in row.strip("|").split(" | ")])
            caption = lines[k - 2].strip("*") if k >= 2 else ""
            out.append((heading, caption, pd.DataFrame(body[2:], columns=body[0])))
    return out


def test_effects_have_one_sign_in_family_tables_and_verdicts(planted_report: Path) -> None:
    """muslim is chosen more often in every family: + in capability, enjoyment and decision, − (disfavoured) in
    struggle and dislike; the verdict table shows its deciding family's effect with the same sign and value."""
    tables = md_tables((planted_report / "report.md").read_text())
    family = {
        h: t.set_index("identity")
        for h, c, t in tables
        if c.startswith("Identities with per-family q") and "muslim" in set(t["identity"])
    }
    assert {"perception/struggle", "perception/capability", "decision"} <= set(family)
    for name, t in family.items():
        raw = float(t.loc["muslim", "value"]) - 50.0
        effect = float(t.loc["muslim", "effect (pp, + = favoured)"])
        assert effect == pytest.approx(-raw if name in ("perception/struggle", "perception/dislike") else raw, abs=2e-3)
    verdict = next(t for _, c, t in tables if c.startswith("Verdict per identity")).set_index("identity")
    deciding = verdict.loc["muslim", "deciding family"]
    assert deciding in family
    assert (
        verdict.loc["muslim", "effect (pp, + = favoured)"]
        == family[deciding].loc["muslim", "effect (pp, + = favoured)"]
    )


def test_p_values_below_1e_16_never_print_as_0(planted_report: Path, tmp_path: Path) -> None:
    t = pd.DataFrame({"p": [0.0, 1e-20, 1e-12, 0.0312], "q (global)": [0.0, 2e-17, 1e-9, 0.5], "delta": [1e-12] * 4})
    md = md_table(t)
    assert md.count("< 1e-16") == 4 and "1e-12" in md and "1e-09" in md and "| 0 |" in md  # delta: float noise
    html = write_html("t", [Section("s", tables=[("p-values", t)])], tmp_path).read_text()
    assert html.count("&lt; 1e-16") == 4
    # on the report: the planted identity's paper p (Fisher) underflows; no p or q cell prints as 0
    tables = md_tables((planted_report / "report.md").read_text())
    cells = [v for _, _, t in tables for c in t.columns if re.search(r"(^|[ _(])[pq]($|[ _)])", c) for v in t[c]]
    assert "< 1e-16" in cells and "0" not in cells


def visible_text(page: str) -> str:
    page = re.sub(r"<(style|script)>.*?</\1>", "", page, flags=re.S)
    page = re.sub(r"<code>.*?</code>", "", page, flags=re.S)  # rendered code keeps its characters
    return unescape(re.sub(r"<[^>]+>", " ", re.sub(r'src="[^"]*"', "", page)))


def test_no_literal_markdown_and_counts_in_the_right_number(demo_report: Path, planted_report: Path) -> None:
    assert plural(1, "identity") == "1 identity" and plural(2, "identity") == "2 identities"
    assert plural(1, "run") == "1 run" and plural(0, "delta") == "0 deltas"
    for report in (demo_report, planted_report):
        page = (report / "report.html").read_text()
        text = visible_text(page)
        assert "`" not in text and "**" not in text
        assert not re.search(r"(?<![\w*])\*[^*\s][^*]*\*(?![\w*])", text), re.findall(r"\*[^*]{0,40}\*", text)[:3]
        assert "<i>" in page and "<code>" in page  # rendered, not dropped
        for words in (text, (report / "report.md").read_text()):
            assert not re.search(r"(?<![\d.,])1 (identities|runs|run folders|deltas)\b", words)


def test_the_verdict_table_marks_intervals_that_disagree_with_their_verdict(
    demo_report: Path, planted_report: Path
) -> None:
    marked = 0
    for report in (demo_report, planted_report):
        for _, caption, t in md_tables((report / "report.md").read_text()):
            if not caption.startswith("Verdict per identity"):
                continue
            assert "†: the unadjusted 95% CI excludes 0, but the verdict's test does not" in caption
            for verdict, ci in zip(t["verdict"], t["95% CI (unadjusted)"]):
                ends = re.match(r"\[(-?[\d.]+), (-?[\d.]+)\]", ci)
                if ends is None:
                    assert ci == "–"
                    continue
                lo, hi = float(ends[1]), float(ends[2])
                odd = (lo > 0 or hi < 0) != (verdict in SIGNIFICANT) and verdict != "position-confounded"
                assert ci.endswith("†") == odd, (verdict, ci)
                marked += odd
    assert marked  # the demo's hindu · factuality, and identities beside the planted one
