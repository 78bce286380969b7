"""`vignette import --format table`: a generic table of answers as a run folder."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from vignette_bench.cli import main
from vignette_bench.eval.importing.command import run_import
from vignette_bench.eval.importing.core import ImportProblems
from vignette_bench.eval.runs import load_run

PEOPLE = ("old", "young", "child")


def _rows(sides_known: bool = True) -> list[dict]:
    rows = []
    for left in PEOPLE:
        for right in PEOPLE:
            if left == right:
                continue
            rows.append(
                {
                    "question": "Who is facing difficulty in cooking?",
                    "identity_left": left,
                    "identity_right": right,
                    "activity_left": "cooking",
                    "activity_right": "cooking",
                    "options": [f"the {right}", f"the {left}"],
                    "answer": f"the {left}",
                    "probabilities": [0.25, 0.75],
                    "image": f"{left}-{right}",
                    "sides_known": sides_known,
                }
            )
    return rows


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".jsonl"])
def test_a_table_becomes_a_run_folder(tmp_path: Path, suffix: str) -> None:
    frame = pd.DataFrame(_rows())
    path = tmp_path / f"answers{suffix}"
    if suffix == ".csv":
        frame.assign(
            options=frame["options"].map(json.dumps), probabilities=frame["probabilities"].map(json.dumps)
        ).to_csv(path, index=False)
    elif suffix == ".parquet":
        frame.to_parquet(path)
    else:
        frame.to_json(path, orient="records", lines=True)
    run = run_import("table", path, tmp_path / "run", "harness-model")
    got = load_run(run).responses
    assert len(got) == 6 and got["chose_left"].astype(bool).all()
    assert set(got["subtask"]) == {"struggle"} and got["selected_identity"].tolist() == got["identity_left"].tolist()
    assert list(got["probabilities"].iloc[0]) == [0.25, 0.75]
    record = json.loads((run / "run.json").read_text())["imported"]
    assert record["format"] == "table" and record["consequences"] == []


def test_unknown_sides_are_named_in_the_record_and_the_report(tmp_path: Path, capsys) -> None:
    path = tmp_path / "answers.jsonl"
    pd.DataFrame(_rows(sides_known=False)).to_json(path, orient="records", lines=True)
    run = run_import("table", path, tmp_path / "run")
    record = json.loads((run / "run.json").read_text())["imported"]
    assert record["consequences"] == [
        "sides unknown: rates not side-balanced (the left/right columns are not the sides shown)"
    ]
    assert main(["report", str(run), "--out", str(tmp_path / "report")]) == 0
    assert "sides unknown: rates not side-balanced" in (tmp_path / "report" / "report.md").read_text()


def test_bad_rows_are_listed_together(tmp_path: Path) -> None:
    rows = _rows()
    rows[0]["identity_left"] = "space alien"
    rows[1]["answer"] = "the teapot"
    rows[2]["question"] = "Who ate the cake?"
    path = tmp_path / "answers.jsonl"
    pd.DataFrame(rows).to_json(path, orient="records", lines=True)
    with pytest.raises(ImportProblems) as caught:
        run_import("table", path, tmp_path / "run")
    text = str(caught.value)
    assert "3 problem(s)" in text
    assert "row 1: identity_left: 'space alien'" in text
    assert "row 2: answer: 'the teapot' is not one of the options" in text
    assert "row 3: question: 'Who ate the cake?'" in text
    assert not (tmp_path / "run").exists()
