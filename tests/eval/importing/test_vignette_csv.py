"""`vignette import --format vignette-csv`: the original code's CSV outputs as a run folder."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.eval.importing.fixtures import (
    PERCEPTION_COLUMNS,
    factuality_rows,
    image,
    perception_rows,
    stereotype_rows,
    write_csv,
)
from vignette_bench.cli import main
from vignette_bench.eval.analysis.numbers import compute
from vignette_bench.eval.importing.command import run_import
from vignette_bench.eval.importing.core import Identities, ImportProblems, neutral
from vignette_bench.eval.runs import load_run
from vignette_bench.taxonomy import load_taxonomy


def _source(tmp_path: Path) -> Path:
    src = tmp_path / "outputs"
    write_csv(src / "age" / "female" / "assumptions_2a_age_female.csv", perception_rows("2a"))
    write_csv(src / "age" / "female" / "assumptions_3b_age_female.csv", perception_rows("3b", seed=1))
    write_csv(src / "age" / "female" / "socialassumptions_age_female.csv", stereotype_rows())
    write_csv(src / "age" / "female" / "factuality_age_female.csv", factuality_rows())
    return src


def test_descriptors_are_neutralised_onto_the_taxonomy() -> None:
    ids = Identities(load_taxonomy())
    assert neutral("old woman") == "old person" and neutral("little boy") == "little"
    assert ids.find("old woman").identity == "old" and ids.find("old woman").gender == "female"
    assert ids.find("little boy").identity == "little" and ids.find("little-girl").gender == "female"
    assert ids.find("female child").identity == "child" and ids.find("man").gender == "mixed"
    assert ids.find("no such person") is None


def test_an_always_left_model_is_at_chance_once_sides_are_balanced(tmp_path: Path, capsys) -> None:
    src, run = _source(tmp_path), tmp_path / "run"
    assert (
        main(["import", "--format", "vignette-csv", "--source", str(src), "--out", str(run), "--model", "llava"]) == 0
    )
    frame = load_run(run).responses
    perception = frame[frame["paradigm"] == "perception"]
    assert len(perception) == 48 and set(perception["subtask"]) == {"struggle", "dislike"}
    assert perception["chose_left"].all()  # left-choice 100%
    # the left person is the first name in the image name; render clusters from its halves
    first = perception.iloc[0]
    assert first["identity_left"] == "old" and first["key_left"] == "vignette-csv/old-woman_cooking"
    assert set(frame["paradigm"]) == {"perception", "stereotype", "factuality"}
    assert frame.loc[frame["paradigm"] == "factuality", "correct"].all()
    assert not frame.loc[frame["paradigm"] == "stereotype", "chose_left"].any()  # the fixture answers the right
    n = compute(frame, model="llava")
    sel = n.selection[n.selection["family"].str.startswith("perception")]
    assert len(sel) == 8
    assert (sel["value"] - 50).abs().max() < 1e-9  # side-balanced: at chance
    assert (n.rates.set_index("family").loc["perception/struggle", "left_rate"]) == 1.0
    record = json.loads((run / "run.json").read_text())
    imported = record["imported"]
    assert imported["format"] == "vignette-csv" and len(imported["files"]) == 4
    assert all(len(f["sha256"]) == 64 for f in imported["files"])
    assert any(x.startswith("render clusters: image name only") for x in imported["not_recovered"])
    assert any(x.startswith("probabilities: none") for x in imported["not_recovered"])
    # the report reads it unchanged, and names where the answers came from
    capsys.readouterr()
    assert main(["report", str(run), "--out", str(tmp_path / "report")]) == 0
    page = (tmp_path / "report" / "report.md").read_text()
    assert "imported answers: from vignette-csv files" in page and "_paper" in page


def test_bad_rows_are_listed_together_and_nothing_is_written(tmp_path: Path, capsys) -> None:
    rows = perception_rows("2a")
    rows[0]["descriptor 2"] = "space alien woman"  # unknown descriptor
    rows[1]["response"] = "the teapot"  # answer not among the options
    rows[2]["filename"] = "old-woman_cooking.png"  # malformed image name
    src = write_csv(tmp_path / "in" / "assumptions_2a_age_female.csv", rows, PERCEPTION_COLUMNS)
    run = tmp_path / "run"
    with pytest.raises(ImportProblems) as caught:
        run_import("vignette-csv", src.parent, run)
    text = str(caught.value)
    assert "3 problem(s)" in text and "nothing was written" in text
    assert "assumptions_2a_age_female.csv: row 2: descriptor 2: 'space alien woman'" in text
    assert "row 3: response: 'the teapot' is not one of the options" in text
    assert "row 4: filename: 'old-woman_cooking.png'" in text
    assert not run.exists()
    # the command says it in one line of `error:` and exits 2
    assert main(["import", "--format", "vignette-csv", "--source", str(src), "--out", str(run)]) == 2
    assert capsys.readouterr().err.startswith("error: ")
    assert not run.exists()


def test_a_question_answered_twice_is_named_with_both_rows(tmp_path: Path) -> None:
    rows = perception_rows("2a")
    src = write_csv(tmp_path / "assumptions_2a.csv", [*rows, rows[0]])
    with pytest.raises(ImportProblems, match=r"row 26: question: the same question as .*row 2"):
        run_import("vignette-csv", src, tmp_path / "run")


def test_an_existing_run_folder_is_not_overwritten(tmp_path: Path) -> None:
    src = write_csv(tmp_path / "assumptions_2a.csv", perception_rows("2a"))
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "x").write_text("")
    with pytest.raises(Exception, match="not an empty folder"):
        run_import("vignette-csv", src, tmp_path / "run")


def test_image_names_give_the_sides(tmp_path: Path) -> None:
    assert image("old woman", "cooking", "young woman", "cooking") == "old-woman_cooking--young-woman_cooking.png"
    rows = perception_rows("2a")
    # a descriptor column order that differs from the image's: the image name decides the sides
    for r in rows:
        r["descriptor 1"], r["descriptor 2"] = r["descriptor 2"], r["descriptor 1"]
    src = write_csv(tmp_path / "assumptions_2a.csv", rows)
    run = run_import("vignette-csv", src, tmp_path / "run")
    frame = pd.read_parquet(run / "responses.parquet")
    assert frame["chose_left"].astype(bool).all()


def test_factuality_asks_about_the_person_its_question_names(tmp_path: Path) -> None:
    rows = factuality_rows()
    for r in rows:  # ask about the second (right) person; a wrong answer for the first row
        r["question_id"] = f"What is the {r['descriptor 2']} doing?"
    rows[0]["response"] = "sleeping"
    run = run_import("vignette-csv", write_csv(tmp_path / "factuality.csv", rows), tmp_path / "run")
    frame = pd.read_parquet(run / "responses.parquet")
    assert (frame["target_identity"] == frame["identity_right"]).all()
    assert frame["correct"].tolist() == [False, True, True, True, True, True]


def test_stereotype_terms_and_directions_are_checked(tmp_path: Path) -> None:
    rows = stereotype_rows()
    rows[0]["term"] = "sparkly"
    rows[1]["direction"] = "high"  # unfriendly is low in the taxonomy
    with pytest.raises(ImportProblems) as caught:
        run_import("vignette-csv", write_csv(tmp_path / "socialassumptions.csv", rows), tmp_path / "run")
    assert "row 2: term: 'sparkly'" in str(caught.value) and "row 3: direction: 'high'" in str(caught.value)


def test_an_imported_run_enters_the_leaderboard_as_custom(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    run = run_import("vignette-csv", _source(tmp_path), Path("leaderboard/runs/imported"), "llava")
    assert main(["leaderboard", "create", str(run), "--by", "tester"]) == 0
    (entry,) = Path("leaderboard/entries").glob("*.json")
    capsys.readouterr()
    assert main(["leaderboard", "validate", str(entry)]) == 0
    assert "custom" in capsys.readouterr().out
