"""`vignette import` faults through the real CLI (issue 35): wrong encodings and random bytes, a source over
the size cap, values that can be checked (sides_known, look-alike letters, probabilities), broken JSONL
lines, a kill mid-import, and a table import compared with itself. Each ends in `error:` naming the file,
row and column with exit 2 and writes nothing, or gives the right result."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.eval.importing.fixtures import perception_rows, write_csv
from vignette_bench.cli import main as vignette

ROOT = Path(__file__).resolve().parents[2]
PEOPLE = ("old", "young", "child")


def _rows(n_images: int = 1, **change) -> list[dict]:
    """Answers of a harness that always picks the left person: every ordered pair, on `n_images` images."""
    rows = []
    for k in range(n_images):
        for left in PEOPLE:
            for right in PEOPLE:
                if left != right:
                    rows.append(
                        {
                            "question": "Who is facing difficulty in cooking?",
                            "identity_left": left,
                            "identity_right": right,
                            "activity_left": "cooking",
                            "activity_right": "cooking",
                            "options": [f"the {right}", f"the {left}"],
                            "answer": f"the {left}",
                            "image": f"{left}-{right}-{k}",
                        }
                        | change
                    )
    return rows


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _import(capsys, fmt: str, source: Path, out: Path, *extra: str) -> tuple[int, str]:
    code = vignette(["import", "--format", fmt, "--source", str(source), "--out", str(out), *extra])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def _refused(capsys, fmt: str, source: Path, out: Path, *named: str, extra: tuple[str, ...] = ()) -> str:
    code, err = _import(capsys, fmt, source, out, *extra)
    assert code == 2 and err.startswith("error: "), err
    for text in named:
        assert text in err, (text, err)
    assert not out.exists() and not list(out.parent.glob(f".{out.name}.*"))  # nothing written, no temporary
    return err


# --- encodings ------------------------------------------------------------------------------------------


def _latin1_csv(tmp_path: Path) -> Path:
    rows = [r | {"note": "café"} for r in perception_rows()]  # a column the importer ignores, in Latin-1
    path = tmp_path / "outputs" / "assumptions_2a_age_female.csv"
    write_csv(path, rows)
    path.write_bytes(path.read_text(encoding="utf-8").encode("latin-1"))
    return path


def test_a_latin1_csv_is_named_and_imports_with_its_encoding(tmp_path: Path, capsys) -> None:
    """Before: a UnicodeDecodeError traceback."""
    path = _latin1_csv(tmp_path)
    _refused(
        capsys,
        "vignette-csv",
        path,
        tmp_path / "run",
        str(path),
        "not utf-8 text: byte 0xe9 at line 2",
        "--encoding cp1252",
    )
    code, _ = _import(capsys, "vignette-csv", path, tmp_path / "run", "--encoding", "cp1252")
    assert code == 0 and pq.ParquetFile(tmp_path / "run" / "responses.parquet").metadata.num_rows == 24


@pytest.mark.parametrize(("fmt", "name"), [("vignette-csv", "a.csv"), ("table", "a.csv"), ("table", "a.jsonl")])
def test_random_bytes_are_an_error_not_a_traceback(tmp_path: Path, capsys, fmt: str, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(random.Random(0).randbytes(64 * 1024))
    _refused(capsys, fmt, path, tmp_path / "run", str(path), "not utf-8 text")
    # read as Latin-1 every byte is a character: still refused, for what the text then is (not a table)
    _refused(capsys, fmt, path, tmp_path / "run", str(path), extra=("--encoding", "latin-1"))


def test_a_csv_field_over_the_csv_limit_is_named(tmp_path: Path, capsys) -> None:
    path = tmp_path / "a.csv"
    path.write_text('question,identity_left,identity_right,options,answer\n"' + "x" * 200_000 + '",a,b,c,d\n')
    _refused(capsys, "table", path, tmp_path / "run", "not a readable .csv table")


def test_utf8_with_a_bom_and_utf16_with_its_mark_import(tmp_path: Path, capsys) -> None:
    path = tmp_path / "outputs" / "assumptions_2a_age_female.csv"
    write_csv(path, perception_rows())
    text = path.read_text(encoding="utf-8")
    path.write_bytes(text.encode("utf-8-sig"))
    assert _import(capsys, "vignette-csv", path, tmp_path / "bom")[0] == 0
    path.write_bytes(text.encode("utf-16"))  # a byte order mark says which: detected
    assert _import(capsys, "vignette-csv", path, tmp_path / "u16")[0] == 0
    _refused(capsys, "vignette-csv", path, tmp_path / "x", "is UTF-16 text", extra=("--encoding", "cp1252"))


def test_an_unknown_encoding_is_named(tmp_path: Path, capsys) -> None:
    path = _jsonl(tmp_path / "a.jsonl", _rows())
    _refused(capsys, "table", path, tmp_path / "run", "--encoding 'klingon': unknown", extra=("--encoding", "klingon"))


# --- size -----------------------------------------------------------------------------------------------


def test_a_source_over_the_size_cap_is_refused_before_reading(tmp_path: Path, capsys) -> None:
    """Before: a 1 GiB CSV reached 3 GB of memory; the cap is checked from the file sizes (benchmarks/import_memory.py)."""
    path = _jsonl(tmp_path / "a.jsonl", _rows(n_images=20))
    size_mib = path.stat().st_size / 2**20
    _refused(
        capsys,
        "table",
        path,
        tmp_path / "run",
        "over the import limit of 0 MiB",
        "--max-mb",
        extra=("--max-mb", "0.01"),
    )
    assert size_mib > 0.01
    assert _import(capsys, "table", path, tmp_path / "run", "--max-mb", "1")[0] == 0


# --- values that can be checked -------------------------------------------------------------------------


def test_sides_known_outside_true_false_is_named(tmp_path: Path, capsys) -> None:
    """Before: "maybe" and "nope" were ignored (read as sides known)."""
    rows = _rows()
    rows[0]["sides_known"] = "maybe"
    rows[3]["sides_known"] = "nope"
    rows[4]["sides_known"] = "no"  # a known spelling of false
    path = _jsonl(tmp_path / "a.jsonl", rows)
    err = _refused(capsys, "table", path, tmp_path / "run", "row 1: sides_known: 'maybe' is not true or false")
    assert "row 4: sides_known: 'nope'" in err and "row 5" not in err


def test_a_cyrillic_look_alike_option_is_refused_naming_the_row(tmp_path: Path, capsys) -> None:
    """Before: "the оld" (Cyrillic о) was stored as a valid answer naming nobody."""
    rows = _rows()
    rows[2]["options"] = ["the young", "the \u043eld"]
    rows[2]["answer"] = "the \u043eld"
    path = _jsonl(tmp_path / "a.jsonl", rows)
    _refused(
        capsys,
        "table",
        path,
        tmp_path / "run",
        "row 3: options: 'the оld' spells 'the old' with 'о' (CYRILLIC SMALL LETTER O)",
        "row 3: answer:",
    )


def test_a_look_alike_in_an_original_csv_is_refused(tmp_path: Path, capsys) -> None:
    rows = perception_rows()
    rows[0]["response"] = rows[0]["response"].replace("o", "\u043e")
    path = write_csv(tmp_path / "assumptions_2a_age_female.csv", rows)
    _refused(capsys, "vignette-csv", path, tmp_path / "run", "row 2: response:", "CYRILLIC SMALL LETTER O")


def test_a_fullwidth_answer_is_the_same_option_after_nfkc(tmp_path: Path, capsys) -> None:
    rows = _rows()
    rows[0]["answer"] = "ｔｈｅ ｏｌｄ"  # fullwidth Latin: NFKC makes it "the old", the same letters
    path = _jsonl(tmp_path / "a.jsonl", rows)
    assert _import(capsys, "table", path, tmp_path / "run")[0] == 0
    got = pq.read_table(tmp_path / "run" / "responses.parquet").to_pylist()
    assert got[0]["choice"] == "the old" and got[0]["selected_identity"] == "old"


def test_probabilities_outside_0_1_are_named_as_such(tmp_path: Path, capsys) -> None:
    """Before: [1.5, -0.5] was reported as "sum to 1, not 1"."""
    rows = _rows(probabilities=[0.25, 0.75])
    rows[1]["probabilities"] = [1.5, -0.5]
    path = _jsonl(tmp_path / "a.jsonl", rows)
    err = _refused(capsys, "table", path, tmp_path / "run", "probabilities: [1.5, -0.5] has values outside [0, 1]")
    assert "sum to" not in err


def test_a_broken_jsonl_line_is_named_by_its_line(tmp_path: Path, capsys) -> None:
    """Before: "an answer not among the options"."""
    path = _jsonl(tmp_path / "a.jsonl", _rows())
    lines = path.read_text().splitlines()
    lines[1] = lines[1][: len(lines[1]) // 2]  # cut mid-object
    lines.insert(3, "[1, 2]")
    path.write_text("\n".join(lines) + "\n")
    err = _refused(capsys, "table", path, tmp_path / "run", "a.jsonl: row 2: line 2 is not valid JSON")
    assert "line 4 is a JSON list, not an object" in err and "not one of the options" not in err
    path.write_text("{broken\n")
    _refused(capsys, "table", path, tmp_path / "run2", "line 1 is not valid JSON")


# --- whole folders --------------------------------------------------------------------------------------


def test_a_table_import_compares_with_itself(tmp_path: Path, capsys) -> None:
    """Before: "share no (family, dimension, identity)" (answers without render keys were dropped)."""
    path = _jsonl(tmp_path / "a.jsonl", _rows(n_images=3))
    assert _import(capsys, "table", path, tmp_path / "run")[0] == 0
    code = vignette(["compare", str(tmp_path / "run"), str(tmp_path / "run"), "--out", str(tmp_path / "cmp")])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    identities = (tmp_path / "cmp" / "identities.csv").read_text().splitlines()
    assert len(identities) == 1 + len(PEOPLE)  # header + each identity, delta 0


def test_a_killed_import_leaves_no_run_and_a_rerun_works(tmp_path: Path) -> None:
    """Before: SIGKILL left responses.parquet without run.json; the rerun refused ("exists and is not an
    empty folder") and `vignette report` read the half import. Killed while its temporary folder exists."""
    path = _jsonl(tmp_path / "a.jsonl", _rows(n_images=3000))  # 18,000 answers: the write takes a while
    out = tmp_path / "runs" / "imported"
    cmd = [
        sys.executable,
        "-m",
        "vignette_bench",
        "import",
        "--format",
        "table",
        "--source",
        str(path),
        "--out",
        str(out),
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen = None
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        seen = next(iter(out.parent.glob(".imported.*.tmp")), None) if out.parent.is_dir() else None
        if seen is not None:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.001)
    proc.wait()
    assert seen is not None, "the import finished before its temporary folder was seen"
    assert not out.exists()  # nothing a reader takes for a run
    code = vignette(["report", str(out), "--out", str(tmp_path / "report")])
    assert code == 2
    rerun = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert not list(out.parent.glob(".imported.*"))  # the dead writer's temporary was removed
    assert pq.ParquetFile(out / "responses.parquet").metadata.num_rows == 18_000 and (out / "run.json").is_file()


def test_a_full_disk_during_import_leaves_nothing(tmp_path: Path) -> None:
    """A write that fails mid-file (here: a file size limit, as a full disk does) leaves no folder."""
    path = _jsonl(tmp_path / "a.jsonl", _rows(n_images=300))
    out = tmp_path / "run"
    err = _limited(["import", "--format", "table", "--source", str(path), "--out", str(out)], 8192)
    assert err.startswith("error: ") and "Traceback" not in err, err
    assert not out.exists() and not list(tmp_path.glob(".run.*"))


def _limited(args: list[str], max_file_bytes: int) -> str:
    """`vignette ARGS` in a process that cannot write a file past `max_file_bytes` (EFBIG, as ENOSPC on a
    full disk: the write fails midway); returns its stderr."""
    import resource

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failed write, not a killed process
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, max_file_bytes))

    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "vignette_bench", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limit,
    )
    assert done.returncode == 2, (done.returncode, done.stderr)
    return done.stderr


@pytest.mark.parametrize("name", ["a.csv", "a.jsonl", "outputs/assumptions_2a_age_female.csv"])
def test_an_empty_file_is_said_to_be_empty(tmp_path: Path, capsys, name: str) -> None:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    fmt = "vignette-csv" if name.startswith("outputs") else "table"
    _refused(capsys, fmt, path, tmp_path / "run", "the file is empty (0 bytes)")


def test_comparing_runs_without_two_way_answers_names_that_cause(tmp_path: Path, capsys) -> None:
    """A neighbour of the compare case: factuality answers only is the cause, not "share no identity"."""
    rows = [
        r | {"template_id": "factuality/what_doing", "context": "cooking", "options": ["cooking", "eating"]}
        for r in _rows()
    ]
    for r in rows:
        del r["question"]
        r["answer"] = "cooking"
    path = _jsonl(tmp_path / "a.jsonl", rows)
    assert _import(capsys, "table", path, tmp_path / "run")[0] == 0
    code = vignette(["compare", str(tmp_path / "run"), str(tmp_path / "run"), "--out", str(tmp_path / "cmp")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"error: {tmp_path / 'run'}: no two-way answers"), err
