"""Responses that contradict themselves are refused by the one reader (formats/responses.py), so
report, compare, explain, merge and the leaderboard never measure them (issue 24, item 3).

Each case edits a real run's responses.parquet (the random responder on a placeholder source) and
asserts that the command ends in `error:` naming the file, a question id and the column.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from vignette_bench.cli import main as vignette
from vignette_bench.dataset_builder.sample import build_sample
from vignette_bench.eval.runtime.merge import MergeError, merge
from vignette_bench.eval.runtime.questions import Variants
from vignette_bench.eval.runtime.run import RunSettings, run
from vignette_bench.formats.responses import ResponsesError, check_columns, read_responses


@pytest.fixture(scope="module")
def pristine_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("responses")
    src = build_sample(tmp / "src", size=48, identities=("man", "woman", "muslim", "hindu"), activities=("cooking",))
    settings = RunSettings(
        source=str(src),
        config="identity_contrast",
        model="random",
        seed=5,
        sample=2,
        image_size=(96, 48),
        variants=Variants((0,), ("identity", "position"), ("image",)),
    )
    run(settings, tmp / "run")
    return tmp / "run"


@pytest.fixture()
def run_dir(pristine_run: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "run"
    shutil.copytree(pristine_run, dst)
    return dst


def edit(run_dir: Path, change) -> list[dict]:
    """Rewrite responses.parquet with `change(rows)` applied; returns the edited rows."""
    path = run_dir / "responses.parquet"
    table = pq.read_table(path)
    rows = table.to_pylist()
    change(rows)
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
    return rows


def report_error(run_dir: Path, tmp_path: Path, capsys) -> str:
    assert vignette(["report", str(run_dir), "--out", str(tmp_path / "report"), "--figures", "none"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("error:")
    return err


def test_pristine_run_reads(run_dir: Path) -> None:
    frame = read_responses(run_dir / "responses.parquet")
    assert len(frame) and frame["valid"].all()


def test_choice_not_among_options(run_dir: Path, tmp_path: Path, capsys) -> None:
    def change(rows):
        for r in rows[:40]:
            r["choice"] = "the astronaut"

    rows = edit(run_dir, change)
    err = report_error(run_dir, tmp_path, capsys)
    assert "responses.parquet" in err and rows[0]["question_id"] in err and "choice:" in err
    assert "40 problem(s)" in err and "more" in err  # all counted, the list capped


def test_duplicated_question_ids(run_dir: Path, tmp_path: Path, capsys) -> None:
    def change(rows):
        for r in rows[:5]:
            twin = dict(r)
            twin["choice"] = next(o for o in r["options"] if o != r["choice"])
            i = r["options"].index(twin["choice"])
            twin["selected_identity"] = r["option_identities"][i]
            twin["chose_left"] = not r["chose_left"] if r["chose_left"] is not None else None
            rows.append(twin)

    rows = edit(run_dir, change)
    err = report_error(run_dir, tmp_path, capsys)
    assert rows[0]["question_id"] in err and "answered twice" in err


@pytest.mark.parametrize("column", ["selected_identity", "chose_left", "correct"])
def test_recorded_outcome_contradicts_choice(run_dir: Path, tmp_path: Path, capsys, column: str) -> None:
    def change(rows):
        for r in rows:
            if column == "correct" and r["correct"] is None:
                continue
            if column == "selected_identity":
                r[column] = r["identity_left"] if r[column] != r["identity_left"] else r["identity_right"]
            else:
                if r[column] is None:
                    continue
                r[column] = not r[column]
            change.qid = r["question_id"]
            return

    edit(run_dir, change)
    err = report_error(run_dir, tmp_path, capsys)
    assert change.qid in err and f"{column}:" in err


def test_invalid_row_with_a_choice(run_dir: Path, tmp_path: Path, capsys) -> None:
    def change(rows):
        rows[0]["valid"] = False

    rows = edit(run_dir, change)
    err = report_error(run_dir, tmp_path, capsys)
    assert rows[0]["question_id"] in err and "invalid row" in err


@pytest.mark.parametrize("bad", [math.nan, math.inf, 0.3])
def test_probabilities(run_dir: Path, tmp_path: Path, capsys, bad: float) -> None:
    def change(rows):
        for r in rows[:3]:
            n = len(r["options"])
            r["probabilities"] = [bad] + [1 / n] * (n - 1)

    rows = edit(run_dir, change)
    err = report_error(run_dir, tmp_path, capsys)
    assert rows[0]["question_id"] in err and "probabilities:" in err


def test_compare_refuses_nan_probabilities(run_dir: Path, pristine_run: Path, tmp_path: Path, capsys) -> None:
    def change(rows):
        for r in rows:
            n = len(r["options"])
            r["probabilities"] = [math.nan] * n

    rows = edit(run_dir, change)
    code = vignette(["compare", str(run_dir), str(pristine_run), "--out", str(tmp_path / "cmp")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert str(run_dir / "responses.parquet") in err and rows[0]["question_id"] in err and "probabilities" in err
    assert not (tmp_path / "cmp").exists()


def test_check_columns_caps_and_counts() -> None:
    cols = {"question_id": ["q"] * 50, "valid": [True] * 50}
    with pytest.raises(ResponsesError) as e:
        check_columns(cols, "x.parquet")
    assert "49 problem(s)" in str(e.value) and "… and 29 more" in str(e.value)


# --- merge: a valid answer is never silently replaced ------------------------------------------------


def _reanswer(run_dir: Path, n: int, valid: bool = True) -> list[str]:
    """Append to a second part `n` answers to already answered questions, each a different option."""
    first = run_dir / "log" / "part-00000.jsonl"
    rows = [json.loads(line) for line in first.read_text().splitlines()][:n]
    out = []
    for r in rows:
        other = next(o for o in r["options"] if o != r["choice"])
        i = r["options"].index(other)
        r.update(choice=other, selected_identity=r["option_identities"][i], raw=other)
        if not valid:
            r.update(
                choice=None, selected_identity="", valid=False, error="backend error", chose_left=None, correct=None
            )
        out.append(r)
    with open(run_dir / "log" / "part-00001.jsonl", "a") as f:
        f.writelines(json.dumps(r) + "\n" for r in out)
    return [r["question_id"] for r in out]


def test_merge_refuses_a_second_different_answer(run_dir: Path, capsys) -> None:
    assert (run_dir / "log" / "part-00000.jsonl").is_file()
    before = (run_dir / "responses.parquet").read_bytes()
    ids = _reanswer(run_dir, 20)
    with pytest.raises(MergeError, match="20 question"):
        merge(run_dir)
    assert vignette(["merge", str(run_dir)]) != 0
    err = capsys.readouterr().err
    assert ids[0] in err and "part-00001.jsonl" in err
    assert (run_dir / "responses.parquet").read_bytes() == before  # nothing replaced


def test_merge_keeps_the_valid_answer_over_a_later_invalid_one(run_dir: Path) -> None:
    before = pq.read_table(run_dir / "responses.parquet").to_pylist()
    _reanswer(run_dir, 5, valid=False)
    report = merge(run_dir)
    assert report.duplicates == 5 and report.invalid == 0
    assert pq.read_table(run_dir / "responses.parquet").to_pylist() == before
