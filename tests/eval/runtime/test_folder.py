"""RunFolder: the one place that knows a run folder's files; atomic writes; old folders still read and resume."""

import json
import os

import pyarrow as pa
import pytest

from tests.eval.runtime.test_record import V0, full_record
from vignette_bench.atomic import atomic_write
from vignette_bench.dataset_builder.sample import build_sample
from vignette_bench.eval.runtime.folder import RunFolder
from vignette_bench.eval.runtime.merge import merge
from vignette_bench.eval.runtime.run import RunSettings, run
from vignette_bench.formats.responses import RESPONSE_SCHEMA
from vignette_bench.formats.run_record import RunRecord


def leftovers(folder) -> list[str]:
    """Names a half-done atomic write would leave: dot-files and *.tmp."""
    return sorted(p.name for p in folder.rglob("*") if p.name.startswith(".") or p.name.endswith(".tmp"))


def test_file_names_come_from_the_folder(tmp_path):
    f = RunFolder(tmp_path / "r").create()
    assert f.log.path.is_dir()
    assert f.record.path == tmp_path / "r" / "run.json" and f.plan.path == tmp_path / "r" / "plan.parquet"
    assert f.responses.path == tmp_path / "r" / "responses.parquet" and f.taxonomy.path == tmp_path / "r" / "taxonomy"
    assert f.log.part_path(3) == tmp_path / "r" / "log" / "part-00003.jsonl"
    assert f.log.sessions_path == tmp_path / "r" / "log" / "sessions.jsonl"
    for rank in (1, 0):
        with f.log.writer(rank) as w:
            w.append([{"question_id": f"q{rank}"}])
    f.log.append_session({"rank": 0})
    assert f.log.part_paths() == [f.log.part_path(0), f.log.part_path(1)]  # sessions.jsonl is not a part
    assert [r["question_id"] for r in f.log.rows()] == ["q0", "q1"] and len(f.log.files()) == 3


def test_atomic_writes_leave_no_temp_files(tmp_path):
    f = RunFolder(tmp_path).create()
    f.record.write(full_record())
    f.plan.write(pa.table({"pair_id": ["p0", "p1"], "key_left": ["a", "b"], "key_right": ["c", "d"]}))
    f.responses.write(pa.Table.from_pylist([], schema=RESPONSE_SCHEMA))
    f.record.write(full_record())  # replacing an existing file, too
    assert leftovers(tmp_path) == []
    assert f.record.read() == full_record() and f.plan.read(columns=["pair_id"]).column(0).to_pylist() == ["p0", "p1"]
    assert f.responses.read().schema == RESPONSE_SCHEMA


def test_a_failed_write_keeps_the_old_file_and_no_temp(tmp_path):
    path = tmp_path / "run.json"
    path.write_text("old")

    def half_then_crash(tmp):
        tmp.write_text("half a new fi")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_write(path, half_then_crash)
    assert path.read_text() == "old" and leftovers(tmp_path) == []


def test_migrate_rewrites_a_version_0_record_once(tmp_path):
    f = RunFolder(tmp_path)
    f.record.path.write_text(json.dumps(V0, indent=2))
    assert f.record.migrate() is True
    on_disk = json.loads(f.record.path.read_text())
    settings = {**V0["settings"], "orders": "rule"}  # version 2 records the sides; every older run took the rule's
    model = {k: v for k, v in V0["model"].items() if k != "model_revision"} | {"revision": ""}  # version 3: one key
    assert on_disk == {**V0, "settings": settings, "model": model, "schema_version": 4} and leftovers(tmp_path) == []
    assert f.record.migrate() is False


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    return str(
        build_sample(
            tmp_path_factory.mktemp("src"),
            size=48,
            identities=("muslim", "hindu", "old", "young"),
            activities=("cooking",),
        )
    )


def test_a_run_folder_from_before_schema_version_merges_and_resumes(source, tmp_path):
    """Strip the version key from a real run folder: merge and a resumed run read it through migrate."""
    settings = RunSettings(source=source, config="portraits", model="random", seed=2, sample=2, image_size=(96, 48))
    first = run(settings, tmp_path, progress=False)
    f = RunFolder(tmp_path)
    data = json.loads(f.record.path.read_text())
    assert data.pop("schema_version") == 4
    assert RunRecord.from_json(data) == f.record.read()  # the key is all that changed
    f.record.path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    before = f.responses.read()
    os.remove(f.responses.path)
    assert merge(tmp_path).written == f.responses.path and f.responses.read().equals(before)
    again = run(settings, tmp_path, progress=False)
    assert again.asked == 0 and again.skipped == first.asked > 0
    assert "schema_version" not in json.loads(f.record.path.read_text())  # a resume leaves the old record alone
    assert f.responses.read().equals(before) and leftovers(tmp_path) == []


def test_a_version_1_run_folder_reads_as_the_rule_order_and_resumes_with_it(source, tmp_path):
    """Version 1 records have no settings.orders: they read as "rule", and the CLI resumes them in that order."""
    settings = RunSettings(
        source=source, config="portraits", model="random", seed=2, sample=2, image_size=(96, 48), orders="rule"
    )
    first = run(settings, tmp_path, progress=False)
    f = RunFolder(tmp_path)
    data = json.loads(f.record.path.read_text())
    del data["settings"]["orders"]
    data["schema_version"] = 1
    f.record.path.write_text(json.dumps(data))
    assert f.record.read().settings.orders == "rule" and f.record.read().schema_version == 4
    from vignette_bench.cli import main as vignette

    args = ["run", "--source", source, "--config", "portraits", "--model", "random", "--seed", "2", "--sample", "2"]
    assert vignette([*args, "--size", "96x48", "--out", str(tmp_path), "--no-progress"]) == 0  # no --orders
    assert f.responses.read().num_rows == first.asked and json.loads(f.record.path.read_text())["schema_version"] == 1


def test_stale_temporaries_of_dead_processes_are_removed_and_live_ones_kept(tmp_path):
    """Issue 15: a killed writer's temp files (and the taxonomy temp folder) go at the next session; a live
    process's, another host's (shared file systems) and unrelated dot files stay."""
    import os
    import subprocess
    import sys

    from vignette_bench.atomic import _writer

    folder = RunFolder(tmp_path / "run").create()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    host = _writer().rsplit("-", 1)[0]
    stale = [
        folder.path / f".run.json.{host}-{dead_pid}.0123abcd.tmp",
        folder.log.path / f".sessions.jsonl.{host}-{dead_pid}.89abcdef.tmp",
    ]
    stale_dir = folder.path / f".taxonomy.{host}-{dead_pid}.tmp"
    kept = [
        folder.path / f".plan.parquet.{host}-{os.getpid()}.0123abcd.tmp",  # this (live) process
        folder.path / f".plan.parquet.otherhost-{dead_pid}.0123abcd.tmp",  # another machine's writer
        folder.path / ".notes.tmp",  # not ours
    ]
    for p in stale + kept:
        p.write_text("x")
    stale_dir.mkdir()
    (stale_dir / "identities.csv").write_text("x")
    assert sorted(folder.remove_stale_temporaries()) == sorted([*stale, stale_dir])
    assert all(p.exists() for p in kept) and not any(p.exists() for p in stale) and not stale_dir.exists()
    # the names atomic_write uses are the ones recognised
    seen = []
    atomic_write(folder.path / "x.txt", lambda tmp: (seen.append(tmp.name), tmp.write_text("1")))
    assert seen[0].startswith(f".x.txt.{_writer()}.") and seen[0].endswith(".tmp")
