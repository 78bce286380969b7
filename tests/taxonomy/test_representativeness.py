"""Visual representativeness per identity (issue 17, part 4): derived from the taxonomy's LLM and human
labels, a loader and runner filter, and a column and grouping in the report's verdicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import vignette
from vignette_bench.taxonomy import REPRESENTATIVENESS, Identity, load_taxonomy


@pytest.mark.parametrize(
    ("llm", "human", "label"),
    [
        ("yes", "yes", "representative"),
        ("yes", "maybe", "ambiguous"),
        ("maybe", "yes", "ambiguous"),
        ("maybe", "maybe", "ambiguous"),
        ("no", "yes", "not_representative"),
        ("Yes", " yes", "representative"),
    ],
)
def test_label_from_the_llm_and_human_judgements(llm: str, human: str, label: str) -> None:
    assert Identity("d", "x", "x man", "", llm, human).visual_representativeness == label


def test_packaged_taxonomy_counts() -> None:
    labels = [i.visual_representativeness for i in load_taxonomy().identities]
    assert {lab: labels.count(lab) for lab in REPRESENTATIVENESS} == {
        "representative": 135,
        "ambiguous": 32,
        "not_representative": 0,
    }


def test_pair_space_filter_keeps_only_the_listed_identities() -> None:
    tax = load_taxonomy()
    space = vignette.PairSpace(tax, "identity_contrast", representativeness="representative")
    full = vignette.PairSpace(tax, "identity_contrast")
    assert 0 < len(space) < len(full)
    cols = space.columns(space.sample(500, 0))
    names = set(cols["identity_left"].to_pylist()) | set(cols["identity_right"].to_pylist())
    assert all(tax.identity(n).visual_representativeness == "representative" for n in names)
    with pytest.raises(vignette.VignetteError, match="unknown representativeness 'depictable'"):
        vignette.PairSpace(tax, "identity_contrast", representativeness="depictable")


def test_runner_filter_and_report_column(tmp_path: Path) -> None:
    from vignette_bench.cli import main as cli
    from vignette_bench.dataset_builder.sample import build_sample

    # "old" is representative (yes/yes); "young" is ambiguous in the packaged lists
    tax = load_taxonomy()
    assert tax.identity("old").visual_representativeness == "representative"
    ambiguous = next(i.name for i in tax.identities if i.visual_representativeness == "ambiguous")
    src = build_sample(tmp_path / "src", size=64, identities=("old", "child", ambiguous), activities=("cooking",))
    out = tmp_path / "run"
    args = ["run", "--source", str(src), "--config", "identity_contrast", "--model", "random", "--out", str(out)]
    assert cli([*args, "--filter", "representativeness=representative", "--no-progress"]) == 0
    record = json.loads((out / "run.json").read_text())
    assert record["dataset"]["selection"]["filters"]["representativeness"] == ["representative"]
    import pandas as pd

    answers = pd.read_parquet(out / "responses.parquet")
    assert ambiguous not in set(answers["identity_left"]) | set(answers["identity_right"])
    assert cli(["report", str(out), "--out", str(tmp_path / "report")]) == 0
    text = (tmp_path / "report" / "report.md").read_text()
    assert "| refusals robust | visual representativeness |" in text and "Verdicts by visual representativeness" in text
