"""Leaderboard: an entry is accepted only if every number recomputes from its responses."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from vignette_bench.cli import main as vignette
from vignette_bench.eval.leaderboard.board import export
from vignette_bench.eval.leaderboard.entry import EntryError, create, validate, write_entry
from vignette_bench.eval.simulate import SimSpec, write_run


def main(argv):
    """`vignette leaderboard ARGV` in-process."""
    return vignette(["leaderboard", *argv])


SMALL = dict(
    dimensions=("religion",),
    genders=("female",),
    n_activities=8,  # 8 render clusters per identity: enough for the cluster-robust test (with its few-cluster
    # wild bootstrap check) to find the planted one
    n_traits=4,
    paradigms=("factuality", "perception", "stereotype", "decision"),
)


@pytest.fixture(scope="module")
def board(tmp_path_factory) -> Path:
    """A leaderboard folder with one valid entry whose responses sit beside it."""
    root = tmp_path_factory.mktemp("board")
    run = write_run(root / "runs" / "a", SimSpec(seed=5, planted=(("hindu", 0.8),), **SMALL))
    entry_path = root / "entries" / "entry.json"
    entry = create(run, by="tester", entry_path=entry_path, date="2026-01-01T00:00:00+00:00")
    write_entry(entry, entry_path)
    return root


def _copy(board: Path, tmp_path: Path) -> tuple[Path, dict]:
    dst = tmp_path / "board"
    shutil.copytree(board, dst)
    path = dst / "entries" / "entry.json"
    return path, json.loads(path.read_text())


def test_created_entry_validates(board):
    v = validate(board / "entries" / "entry.json")
    e = v.entry
    assert e["model"]["id"] == "reference/uniform-random"
    assert e["responses"]["location"] == "../runs/a/responses.parquet"  # relative to the entry
    assert set(e["metrics"]) >= {"decision", "stereotype", "factuality", "perception/struggle"}
    dec = e["metrics"]["decision"]
    assert dec["n_significant"] >= 1 and dec["bias_magnitude"] > 0
    # noise-corrected RMS with its CI; one identity planted at 80% among 12 gives a few pp, not 0
    assert dec["bias_magnitude_ci_low"] <= dec["bias_magnitude"] <= dec["bias_magnitude_ci_high"]
    assert dec["bias_magnitude_ci_low"] > 0 and dec["answer_mode"] == "choice"
    assert 0 < dec["invalid_rate"] < 0.2 and 0.4 < dec["left_rate"] < 0.6
    assert e["dataset"]["placeholder"] is True


def test_hand_edited_number_is_rejected(board, tmp_path):
    path, e = _copy(board, tmp_path)
    e["metrics"]["decision"]["bias_magnitude"] -= 0.5  # "make our model look fairer"
    path.write_text(json.dumps(e))
    with pytest.raises(EntryError) as err:
        validate(path)
    assert err.value.field == "metrics.decision.bias_magnitude" and "responses give" in err.value.reason


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda e: e["metrics"]["decision"].__setitem__("n_significant", 0), "metrics.decision.n_significant"),
        (lambda e: e["metrics"]["decision"].pop("left_rate"), "metrics.decision.left_rate"),
        (lambda e: e["metrics"]["decision"].__setitem__("answer_mode", "score"), "metrics.decision.answer_mode"),
        (lambda e: e["metrics"]["decision"].__setitem__("answer_mode", "guess"), "metrics.decision.answer_mode"),
        (
            lambda e: e["metrics"]["decision"].__setitem__(
                "bias_magnitude_ci_high", e["metrics"]["decision"]["bias_magnitude_ci_high"] + 1
            ),
            "metrics.decision.bias_magnitude_ci_high",
        ),
        (lambda e: e["metrics"]["decision"].pop("bias_magnitude_ci_low"), "metrics.decision.bias_magnitude_ci_low"),
        (
            lambda e: e["metrics"].__setitem__("decision/agency", {"n": 1, "invalid_rate": 0.0}),
            "metrics.decision/agency",
        ),
        (lambda e: e["sample"].__setitem__("n_pairs", 1), "sample.n_pairs"),
        (lambda e: e["model"].__setitem__("id", "someone/else"), "model.id"),
        (lambda e: e["responses"].__setitem__("sha256", "0" * 64), "responses.sha256"),
        (lambda e: e.pop("submitted"), "(entry)"),
        (lambda e: e.__setitem__("extra", 1), "(entry)"),
        (lambda e: e["responses"].__setitem__("sha256", "not-hex"), "responses.sha256"),
        (lambda e: e["responses"].__setitem__("location", "missing.parquet"), "responses.location"),
    ],
)
def test_tampered_or_malformed_entries_name_the_field(board, tmp_path, edit, field):
    path, e = _copy(board, tmp_path)
    edit(e)
    path.write_text(json.dumps(e))
    with pytest.raises(EntryError) as err:
        validate(path)
    assert err.value.field == field, str(err.value)


def test_non_finite_values_are_rejected(board, tmp_path):
    path, e = _copy(board, tmp_path)
    text = json.dumps(e).replace('"polarity": ', '"polarity": NaN, "x": ', 1)
    path.write_text(text)
    with pytest.raises(EntryError, match="non-finite"):
        validate(path)
    e["adapter"]["temperature"] = float("inf")
    path.write_text(json.dumps(e))  # Python writes Infinity
    with pytest.raises(EntryError, match="non-finite"):
        validate(path)


def test_changed_responses_fail_the_hash(board, tmp_path):
    path, e = _copy(board, tmp_path)
    parquet = tmp_path / "board" / "runs" / "a" / "responses.parquet"
    frame = pd.read_parquet(parquet)
    frame.loc[frame.index[:50], "selected_identity"] = ""  # rewrite some answers
    frame.to_parquet(parquet)
    with pytest.raises(EntryError) as err:
        validate(path)
    assert err.value.field == "responses.sha256"


def test_cli_validate_build_export(board, tmp_path, capsys):
    path, e = _copy(board, tmp_path)
    assert main(["validate", str(path)]) == 0
    bad = path.with_name("bad.json")
    e["metrics"]["stereotype"]["polarity"] = 0.0
    bad.write_text(json.dumps(e))
    assert main(["validate", str(path), str(bad)]) == 1
    assert "REJECT" in capsys.readouterr().err
    bad.unlink()
    out = tmp_path / "site"
    assert main(["build", "--entries", str(path.parent), "--out", str(out)]) == 0
    md = (out / "leaderboard.md").read_text()
    assert "reference/uniform-random" in md and "decision noise-corrected RMS" in md and "decision 95% CI" in md
    assert "| choice |" in md  # the answer mode beside the results
    page = (out / "leaderboard.html").read_text()
    assert 'id="board"' in page and "<svg" in page and "self-reported" in page and "custom" in page
    # the drill-down opens with the report's findings block: the planted identity in words, with its CI
    drill = page.split("findings and per identity</summary>", 1)[1]
    assert "<b>hindu</b> (religion) — bias +" in drill and "(95% CI)" in drill and "Could not have found" in drill
    assert main(["export", str(path), "--repo", "org/vignette", "--out", str(tmp_path / "model")]) == 0
    files = list((tmp_path / "model" / ".eval_results").glob("*.yaml"))
    assert len(files) == 1
    from huggingface_hub import parse_eval_result_entries

    parsed = parse_eval_result_entries(yaml.safe_load(files[0].read_text()))
    tasks = {p.task_id: p.value for p in parsed}
    assert all(p.dataset_id == "org/vignette" for p in parsed)
    assert tasks["decision_bias_magnitude"] == pytest.approx(e["metrics"]["decision"]["bias_magnitude"], abs=1e-6)


def test_create_from_cli_and_bad_run(board, tmp_path, capsys):
    out = tmp_path / "entries"
    assert (
        main(
            [
                "create",
                str(board / "runs" / "a"),
                "--by",
                "me",
                "--out",
                str(out),
                "--location",
                "hf://datasets/org/vignette-results/runs/a/responses.parquet",
            ]
        )
        == 0
    )
    (entry,) = out.glob("*.json")
    assert json.loads(entry.read_text())["responses"]["location"].startswith("hf://")
    assert (
        main(["create", str(tmp_path / "nope"), "--by", "me", "--out", str(out)]) == 2
    )  # an error, not a judgement (docs/cli.md)
    assert "not a folder" in capsys.readouterr().err


def test_export_writes_the_hub_format(board, tmp_path):
    e = validate(board / "entries" / "entry.json").entry
    path = export(e, tmp_path, "org/vignette", source_url="https://huggingface.co/spaces/org/leaderboard")
    data = yaml.safe_load(path.read_text())
    assert data[0]["dataset"]["id"] == "org/vignette" and data[0]["source"]["name"] == "VIGNETTE leaderboard"


# --- untrusted text and files: no traceback, no broken table, no overwritten entry ---------------------------


@pytest.mark.parametrize("shape", ["list", "object"])
def test_an_entry_nested_40k_levels_deep_is_an_error_not_a_recursion_error(board, tmp_path, capsys, shape):
    path, _ = _copy(board, tmp_path)
    deep = path.with_name("deep.json")
    n = 40_000  # far past Python's recursion limit, under the entry size cap (boardfiles.ENTRY_MAX_BYTES)
    deep.write_text("[" * n + "]" * n if shape == "list" else '{"a":' * n + "1" + "}" * n)
    with pytest.raises(EntryError, match="nested more than 64 levels deep"):
        validate(deep)
    assert main(["validate", str(deep)]) == 1
    err = capsys.readouterr().err
    assert "REJECT" in err and "nested more than 64 levels deep" in err and "Traceback" not in err
    for argv in (["verify", str(deep), "--model", "random"], ["export", str(deep), "--repo", "org/vignette"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and "nested more than 64 levels deep" in err and "Recursion" not in err
    site = tmp_path / "site"
    assert main(["build", "--entries", str(path.parent), "--out", str(site)]) == 1  # a rejection fails the build
    assert "deep.json: (entry): JSON nested more than 64 levels deep" in capsys.readouterr().err


def _cells(line: str) -> int:
    n, i = 0, 0
    while i < len(line):
        n += line[i] == "|"
        i += 2 if line[i] == "\\" else 1
    return n


HOSTILE = "org/evil <!-- hide --> <img src=x onerror=alert(1)> | [link](javascript:x) a\\|b *b* `c`"


def test_board_cells_are_escaped_in_markdown_and_html(tmp_path, capsys):
    run = write_run(tmp_path / "runs" / "evil", SimSpec(seed=5, model_id=HOSTILE, **SMALL))
    entry_path = tmp_path / "entries" / "evil.json"
    write_entry(create(run, by="<b>me</b>", entry_path=entry_path), entry_path)
    assert validate(entry_path).entry["model"]["id"] == HOSTILE  # printable text is a valid name
    out = tmp_path / "site"
    assert main(["build", "--entries", str(entry_path.parent), "--out", str(out)]) == 0
    md = (out / "leaderboard.md").read_text()
    assert not re.search(r"(?<!\\)[<>`*\[]", md)  # no unescaped character Markdown or HTML would act on
    header, _, row = md.splitlines()[2:5]
    # the row has as many cells as the header: no pipe of the name splits it (GFM: a backslash escapes the next
    # character, and only an unescaped pipe separates cells)
    assert _cells(row) == _cells(header)
    assert r"\<\!-- hide --\> \<img src=x onerror=alert(1)\> \| \[link\](javascript:x) a\\\|b \*b\* \`c\`" in md
    page = (out / "leaderboard.html").read_text()
    assert "<img" not in page and "<!-- hide" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page


@pytest.mark.parametrize("name", ["org/evil\nmodel", "org/evil\r<!--", "org/\x1b[31mred", "org/a\u2028b"])
def test_control_characters_in_a_model_name_are_refused_at_create_and_validate(board, tmp_path, name):
    run = write_run(tmp_path / "runs" / "ctl", SimSpec(seed=5, model_id=name, **SMALL))
    with pytest.raises(EntryError, match="control character or line break") as err:
        create(run, by="me", entry_path=tmp_path / "entries" / "x.json")
    assert err.value.field == "model.id"
    path, e = _copy(board, tmp_path)
    e["submitted"]["by"] = name.replace("org/", "")
    path.write_text(json.dumps(e))
    with pytest.raises(EntryError, match="control character or line break") as err:
        validate(path)
    assert err.value.field == "submitted.by"


def test_create_refuses_a_run_without_run_json(board, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(board / "runs" / "a", run)
    (run / "run.json").unlink()
    with pytest.raises(EntryError, match="no run.json") as err:
        create(run, by="me", entry_path=tmp_path / "entries" / "x.json")
    assert err.value.field == "run"
    assert (
        main(["create", str(run), "--by", "me", "--out", str(tmp_path / "entries")]) == 2
    )  # an error, not a judgement (docs/cli.md)
    assert "no run.json" in capsys.readouterr().err and not (tmp_path / "entries").exists()


def test_create_never_overwrites_another_entry(board, tmp_path, capsys):
    out = tmp_path / "entries"
    run = str(board / "runs" / "a")
    assert main(["create", run, "--by", "first", "--out", str(out)]) == 0
    (path,) = out.glob("*.json")
    before = path.read_text()
    assert main(["create", run, "--by", "second", "--out", str(out)]) == 2  # an error, not a judgement (docs/cli.md)
    err = capsys.readouterr().err
    assert "already holds another entry" in err and "'first'" in err and "'second'" in err
    assert path.read_text() == before and len(list(out.glob("*.json"))) == 1
    # the same submitter making the same run's entry again (e.g. with its published location) may
    loc = "hf://datasets/org/results/runs/a/responses.parquet"
    assert main(["create", run, "--by", "first", "--out", str(out), "--location", loc]) == 0
    assert json.loads(path.read_text())["responses"]["location"] == loc
    path.write_text("{broken")  # a file that is no entry is not replaced either
    assert main(["create", run, "--by", "first", "--out", str(out)]) == 2  # an error, not a judgement (docs/cli.md)
    assert path.read_text() == "{broken"
