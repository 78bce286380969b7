"""Messages that name the real cause (issue 35), through the real CLI: an empty index is "the index has no
rows" (not "the filters select no pairs"), a cherry-picked subset is refused as a subset, and an inspect
log whose score was edited is refused because the model's own reply says otherwise."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from vignette_bench.cli import main as vignette


def _empty_index(source: Path) -> None:
    index = source / "renders" / "index.parquet"
    pq.write_table(pq.read_table(index).slice(0, 0), index)


@pytest.mark.parametrize(
    "command",
    [
        ["info", "--source", "{src}"],
        ["run", "--source", "{src}", "--config", "identity_contrast", "--model", "random", "--out", "{tmp}/r"],
    ],
    ids=["info", "run"],
)
def test_an_empty_index_says_so(source: Path, tmp_path: Path, capsys, command: list[str]) -> None:
    _empty_index(source)
    code = vignette([a.format(src=source, tmp=tmp_path) for a in command])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and "the index has no rows" in err, err
    assert "select no pairs" not in err


def test_build_verify_does_not_pass_an_empty_index(source: Path, capsys) -> None:
    """Before: "ok: all 0 index rows match their shards"."""
    _empty_index(source)
    assert vignette(["build", "verify", "--source", str(source)]) == 1
    out = capsys.readouterr().out
    assert "the index has no rows" in out and "ok:" not in out


def test_a_cherry_picked_subset_of_a_custom_run_is_refused_as_a_subset(source: Path, tmp_path: Path, capsys) -> None:
    """Before: a subset of a custom run (seed 3) validated as ok (and the issue's was refused for 'no answer
    probabilities'); a run answers every question its settings plan, so fewer answers were chosen."""
    run = tmp_path / "board" / "runs" / "seed3"
    args = ["run", "--source", str(source), "--config", "identity_contrast", "--model", "random", "--seed", "3"]
    assert vignette([*args, "--out", str(run), "--no-progress"]) == 0
    frame = pd.read_parquet(run / "responses.parquet")
    frame[frame["chose_left"] != True].to_parquet(run / "responses.parquet")  # noqa: E712 (keep what flatters)
    entries = tmp_path / "board" / "entries"
    assert vignette(["leaderboard", "create", str(run), "--by", "tester", "--out", str(entries)]) == 0
    (entry,) = entries.iterdir()
    capsys.readouterr()
    # the board's own source (custom entries of another source are listed unchecked and never fetched: issue 34)
    assert vignette(["leaderboard", "validate", str(entry), "--source", str(source)]) != 0
    said = capsys.readouterr()
    text = said.out + said.err
    assert "responses.question_id: the entry's run settings ask" in text and "have no answer" in text, text
    assert "probabilities" not in text


def test_an_inspect_log_with_an_edited_score_is_refused(tmp_path: Path, capsys) -> None:
    """Before: a score changed to the other option (its other fields made consistent) imported, although the
    model's recorded reply still named the original answer."""
    pytest.importorskip("inspect_ai")
    from inspect_ai import eval as inspect_eval
    from inspect_ai.log import read_eval_log, write_eval_log

    import tests.inspect.test_inspect_tasks as rules  # registers the vignette_rule model API
    from vignette_bench.dataset_builder.sample import build_sample
    from vignette_bench.inspect_tasks import identity_contrast

    source = build_sample(tmp_path / "src", size=48, identities=rules.IDENTITIES, activities=rules.ACTIVITIES)
    task = identity_contrast(source=str(source), **rules.ARGS)
    (log,) = inspect_eval(task, model="vignette_rule/left", log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success", log.error
    path = Path(log.location)
    edited = read_eval_log(str(path))
    sample = next(s for s in edited.samples or [] if (s.scores or {})["vignette_choice"].metadata["response"]["valid"])
    response = sample.scores["vignette_choice"].metadata["response"]  # type: ignore[index]
    k = response["options"].index(response["choice"])
    other = 1 - k
    response.update(
        choice=response["options"][other],
        selected_identity=response["option_identities"][other],
        chose_left=None if response["chose_left"] is None else not response["chose_left"],
    )
    write_eval_log(edited, str(path))
    out = tmp_path / "run"
    code = vignette(["import", "--format", "inspect", "--source", str(path), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and "Traceback" not in err, err
    assert f"sample {sample.id}: the score records the choice {response['options'][other]!r}" in err
    assert f"names {response['options'][k]!r}" in err and not out.exists()
