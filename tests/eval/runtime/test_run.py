"""The runner end to end on a placeholder source: resume after SIGKILL, shards + merge, bad answers."""

import collections
import json
import os
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

from tests import REPO_ROOT
from vignette_bench.cli import main as vignette
from vignette_bench.dataset_builder.sample import build_sample
from vignette_bench.eval.adapters.base import ChoiceRequest, ChoiceResult, ModelAdapter
from vignette_bench.eval.runtime.folder import RunFolder
from vignette_bench.eval.runtime.merge import MergeError, merge
from vignette_bench.eval.runtime.questions import Variants
from vignette_bench.eval.runtime.run import RunError, RunSettings, Shard, run
from vignette_bench.formats.jsonl import LogCorrupt, scan_part


def run_main(argv):
    """`vignette run ARGV` in-process."""
    return vignette(["run", *argv])


def merge_main(argv):
    """`vignette merge ARGV` in-process."""
    return vignette(["merge", *argv])


ROOT = REPO_ROOT
IDENTITIES = ("man", "woman", "muslim", "hindu", "christian", "old", "young")
ACTIVITIES = ("cooking", "driving", "teaching")


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    return str(build_sample(tmp_path_factory.mktemp("src"), size=48, identities=IDENTITIES, activities=ACTIVITIES))


def settings(source, config="portraits", model="random", **kw):
    base = dict(
        source=source,
        config=config,
        model=model,
        seed=5,
        sample=6,
        image_size=(96, 48),
        variants=Variants((0, 1), ("identity", "position"), ("image", "text")),
    )
    return RunSettings(**{**base, **kw})


SMALL = Variants((0,), ("identity",), ("image", "text"))  # 120 questions per portrait pair


def cli(source, out, model, *extra, python=True):
    args = [
        "--source",
        source,
        "--config",
        "portraits",
        "--model",
        model,
        "--out",
        str(out),
        "--sample",
        "3",
        "--seed",
        "5",
        "--size",
        "96x48",
        "--no-progress",
        "--variants",
        "paraphrase=0",
        "--variants",
        "option_style=identity",
        "--variants",
        "modality=image,text",
        *extra,
    ]
    return [sys.executable, "-m", "vignette_bench", "run", *args] if python else args


def env(**extra):
    e = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", **extra}
    e.pop("RANK", None)
    e.pop("WORLD_SIZE", None)
    return {**e, **extra}


def part_path(run_dir, rank):
    return RunFolder(run_dir).part_path(rank)


def table(run_dir):
    return pq.read_table(RunFolder(run_dir).responses_path)


def test_run_writes_schema_provenance_and_resumes_as_noop(source, tmp_path):
    s = settings(source, sample=4)
    first = run(s, tmp_path, progress=False)
    t = table(tmp_path)
    assert first.asked == t.num_rows == 4 * 60 * 2 * 2 * 2 and first.pairs_composed == 4
    assert t.column("question_id").to_pylist() == list(dict.fromkeys(t.column("question_id").to_pylist()))
    rows = t.to_pylist()
    assert all(r["valid"] and r["choice"] in r["options"] for r in rows)
    assert {r["paradigm"] for r in rows} == {"stereotype"} and {r["direction"] for r in rows} == {"high", "low"}
    record = json.loads((tmp_path / "run.json").read_text())
    assert record["schema_version"] == 4 and RunFolder(tmp_path).read_record().settings == s
    assert record["model"]["model_id"] == "reference/random-seed5"
    assert record["settings"]["seed"] == 5 and len(record["template_hash"]) == 16
    assert len(record["dataset"]["index_sha256"]) == 64 and record["dataset"]["selection"]["sample"] == 4
    assert {"datasets", "pyarrow", "python"} <= set(record["versions"])
    kept = sorted(p.name for p in (tmp_path / "taxonomy").iterdir())  # the source's taxonomy, kept with the run
    assert kept == sorted(
        [
            "identities.csv",
            "activities.csv",
            "sscm_terms.csv",
            "roles.csv",
            "role_question_templates.csv",
            "near_synonyms.csv",
        ]
    )
    again = run(s, tmp_path, progress=False)
    assert again.asked == 0 and again.skipped == t.num_rows and again.pairs_composed == 0
    assert table(tmp_path).equals(t)
    with pytest.raises(RunError, match="other settings"):
        run(settings(source, seed=6), tmp_path, progress=False)
    with pytest.raises(RunError, match="resuming would mix answers of two setups"):
        run(settings(source, sample=4, model="random:seed=9"), tmp_path, progress=False)
    # a spec change that does not change answers (here: latency) resumes
    assert run(settings(source, sample=4, model="random:delay=0.001"), tmp_path, progress=False).skipped == t.num_rows


def test_sigkill_midway_then_restart_equals_uninterrupted_run(source, tmp_path, capsys):
    reference = tmp_path / "reference"
    run(settings(source, sample=3, variants=SMALL), reference, progress=False)  # same seed, no delay: same answers
    killed = tmp_path / "killed"
    log = part_path(killed, 0)
    proc = subprocess.Popen(
        cli(source, killed, "random:delay=0.02", "--batch-size", "8"),
        env=env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 60
    while time.time() < deadline and (not log.exists() or log.read_bytes().count(b"\n") < 40):
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    lines_at_kill = log.read_bytes().count(b"\n")
    assert 40 <= lines_at_kill < table(reference).num_rows, "the run must be killed midway"
    with open(log, "ab") as f:  # a write torn by the crash: half a row, no newline
        f.write(b'{"question_id": "0123456789abcdef", "pair_id": "port')
    assert scan_part(log).torn
    with pytest.raises(MergeError, match="have no answer"):
        merge(killed)
    assert run_main(cli(source, killed, "random:delay=0.02", "--batch-size", "8", python=False)) == 0  # restart
    summary = json.loads(capsys.readouterr().out)
    assert summary["skipped"] == lines_at_kill and summary["asked"] == table(reference).num_rows - lines_at_kill
    assert table(killed).equals(table(reference))
    part = scan_part(log)
    ids = [r["question_id"] for r in part.rows]
    assert not part.torn and len(ids) == len(set(ids)) == table(reference).num_rows  # no duplicate, no gap
    sessions = (killed / "log" / "sessions.jsonl").read_text().splitlines()
    assert len(sessions) == 2 and json.loads(sessions[1])["repaired_torn_bytes"] > 0


def test_two_processes_and_merge_equal_one_process(source, tmp_path, capsys):
    single = tmp_path / "single"
    run(settings(source, sample=3, variants=SMALL), single, progress=False)
    split = tmp_path / "split"
    procs = [
        subprocess.Popen(cli(source, split, "random", "--shard", "0/2"), env=env(), stderr=subprocess.PIPE, text=True),
        subprocess.Popen(
            cli(source, split, "random"), env=env(RANK="1", WORLD_SIZE="2"), stderr=subprocess.PIPE, text=True
        ),
    ]
    for p in procs:
        assert p.wait(timeout=120) == 0, p.stderr.read()
    parts = sorted(p.name for p in (split / "log").glob("part-*.jsonl"))
    assert parts == ["part-00000.jsonl", "part-00001.jsonl"]
    sizes = [len(scan_part(split / "log" / p).rows) for p in parts]
    assert all(sizes) and sum(sizes) == table(single).num_rows
    (split / "responses.parquet").unlink(missing_ok=True)  # the last rank to finish merges; redo it by hand
    assert merge_main([str(split)]) == 0
    assert json.loads(capsys.readouterr().out)["missing"] == 0
    assert table(split).equals(table(single))


def test_one_shard_alone_leaves_a_gap_that_merge_reports(source, tmp_path):
    result = run(settings(source), tmp_path, shard=Shard(0, 2), progress=False)
    assert result.responses is None
    report = merge(tmp_path, write=False)
    assert report.missing > 0 and report.answered + report.missing == report.planned
    with pytest.raises(MergeError, match="rerun"):
        merge(tmp_path)
    assert not (tmp_path / "responses.parquet").exists()


class OffScript(ModelAdapter):
    """Answers outside the options for every other question, as an unconstrained API model may."""

    def __init__(self, fix: bool = False):
        self.fix = fix

    def choose(self, batch: list[ChoiceRequest]) -> list[ChoiceResult]:
        return [
            ChoiceResult(
                r.question_id, r.options[0] if self.fix or i % 2 else "Both of them, really.", raw=f"answer {i}"
            )
            for i, r in enumerate(batch)
        ]

    def provenance(self):
        return {"model_id": "test/off-script", "model_revision": ""}


def test_answers_outside_options_are_invalid_and_can_be_retried(source, tmp_path):
    s = settings(source, model="off-script", variants=Variants())
    first = run(s, tmp_path, adapter=OffScript(), batch_size=4, progress=False)
    rows = table(tmp_path).to_pylist()
    bad = [r for r in rows if not r["valid"]]
    assert len(bad) == len(rows) // 2 == first.invalid
    assert all(r["choice"] is None and r["selected_identity"] == "" and r["raw"].startswith("answer") for r in bad)
    assert all("not one of the options" in r["error"] for r in bad)
    retried = run(s, tmp_path, adapter=OffScript(fix=True), batch_size=4, retry_invalid=True, progress=False)
    assert retried.asked == len(bad)
    after = table(tmp_path).to_pylist()
    assert len(after) == len(rows) and all(r["valid"] for r in after)
    assert merge(tmp_path).duplicates == len(bad)  # the log keeps both answers; the latest wins


def test_always_left_and_corrupt_log(source, tmp_path):
    run(
        settings(source, model="always-left", variants=Variants(option_styles=("identity", "position"))),
        tmp_path,
        progress=False,
    )
    rows = table(tmp_path).to_pylist()
    assert rows and all(r["chose_left"] is True and r["selected_identity"] == r["identity_left"] for r in rows)
    log = part_path(tmp_path, 0)
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(lines[0] + b"{broken\n" + b"".join(lines[1:]))
    with pytest.raises(LogCorrupt, match="line 2"):
        merge(tmp_path)


def test_bad_options_are_named(source, tmp_path, capsys):
    assert run_main(cli(source, tmp_path, "random", "--filter", "colour=blue", python=False)) == 2
    err = capsys.readouterr().err  # refused by the parser, before the job starts: the keys it takes are named
    assert "argument --filter" in err and "'colour=blue'" in err and "dimensions" in err
    assert run_main(cli(source, tmp_path, "random", "--size", "big", python=False)) == 2
    assert "WIDTHxHEIGHT" in capsys.readouterr().err
    with pytest.raises(ValueError, match="unknown option"):
        run(settings(source, model="random:temperature=1"), tmp_path / "x", progress=False)


def test_prefetch_and_a_failing_composition(source, tmp_path):
    from vignette_bench.eval.runtime.plan import open_pairs

    s = settings(source, sample=4, variants=SMALL)
    reference = run(s, tmp_path / "reference", batch_size=8, prefetch=0, progress=False)
    pairs = open_pairs(s)
    compose, calls = pairs.compose, []

    def broken(row):  # the third pair's render cannot be read
        calls.append(row["pair_id"])
        if len(calls) == 3:
            raise OSError(f"render of {row['pair_id']} unreadable")
        return compose(row)

    pairs.compose = broken
    with pytest.raises(OSError, match="unreadable"):
        run(s, tmp_path / "failed", source=pairs, batch_size=8, prefetch=3, progress=False)
    answered = {r["pair_id"] for r in scan_part(part_path(tmp_path / "failed", 0)).rows}
    assert answered == set(calls[:2])  # earlier pairs answered; nothing of the broken one or after it
    pairs.compose = compose
    resumed = run(s, tmp_path / "failed", source=pairs, batch_size=8, prefetch=3, progress=False)
    assert resumed.pairs_composed == 2
    assert table(tmp_path / "failed").equals(table(reference.responses.parent))


def test_settings_that_ask_nothing_are_refused(source, tmp_path):
    with pytest.raises(RunError, match="carry none of them"):
        run(settings(source, config="identity_contrast", paradigms=("stereotype",)), tmp_path / "a", progress=False)
    with pytest.raises(RunError, match="no position style"):
        run(
            settings(source, config="activity_contrast", variants=Variants(option_styles=("position",))),
            tmp_path / "b",
            progress=False,
        )


def test_a_question_answered_twice_does_not_hide_a_gap_in_its_pair(source, tmp_path):
    s = settings(source, model="off-script", sample=2, variants=Variants())
    run(s, tmp_path, adapter=OffScript(), batch_size=4, progress=False)
    run(
        s, tmp_path, adapter=OffScript(fix=True), batch_size=4, retry_invalid=True, progress=False
    )  # re-answers: duplicates
    log = part_path(tmp_path, 0)
    lines = log.read_bytes().splitlines(keepends=True)
    answered = collections.Counter(json.loads(line)["question_id"] for line in lines)
    drop = next(i for i, line in enumerate(lines) if answered[json.loads(line)["question_id"]] == 1)
    log.write_bytes(b"".join(lines[:drop] + lines[drop + 1 :]))  # lose one answer of a pair that also has duplicates
    resumed = run(s, tmp_path, adapter=OffScript(fix=True), batch_size=4, progress=False)
    assert resumed.asked == 1 and merge(tmp_path, write=False).missing == 0


def test_filters_reach_vignette(source, tmp_path, capsys):
    args = cli(source, tmp_path, "random", "--filter", "dimensions=religion", "--filter", "gender=female", python=False)
    args[args.index("--sample") + 1] = "2"
    assert run_main(args) == 0
    frame = table(tmp_path).to_pandas()
    assert (
        set(frame["dimension"]) == {"religion"}
        and set(frame["gender"]) == {"female"}
        and frame["pair_id"].nunique() == 2
    )
    assert json.loads((tmp_path / "run.json").read_text())["dataset"]["selection"]["filters"]["dimensions"] == [
        "religion"
    ]


def test_log_tail_is_found_past_long_torn_writes(tmp_path):
    from vignette_bench.eval.runtime.runlog import PartWriter
    from vignette_bench.formats.jsonl import iter_part, tail_state

    log = tmp_path / "part-00000.jsonl"
    with PartWriter(log) as writer:
        writer.append([{"question_id": "a", "pair_id": "p"}, {"question_id": "b", "pair_id": "p"}])
    good = log.stat().st_size
    with open(log, "ab") as f:
        f.write(b'{"question_id": "c", "raw": "' + b"x" * 200_000)  # torn, longer than one read chunk
    assert tail_state(log) == (good, True) and [r["question_id"] for r in iter_part(log)] == ["a", "b"]
    with PartWriter(log) as writer:  # reopening cuts the torn tail before appending
        assert writer.repaired_bytes == 200_000 + 29
        writer.append([{"question_id": "c", "pair_id": "p"}])
    assert [r["question_id"] for r in iter_part(log)] == ["a", "b", "c"] and tail_state(log)[1] is False


def test_resume_refuses_a_changed_chat_template_or_weights_rewritten_in_place(source, tmp_path):
    """Issue 15: the chat template digest and a weights digest are part of what a resume must match."""
    import shutil

    from vignette_bench.eval.adapters.tiny import build_tiny_vlm

    model = build_tiny_vlm("llava", tmp_path / "model")
    spec = f"hf:{model}?mode=score"
    out = tmp_path / "run"
    run(settings(source, sample=2, model=spec), out, progress=False)
    template = next(p for p in (model / "chat_template.jinja", model / "chat_template.json") if p.exists())
    saved = template.read_bytes()
    template.write_bytes(saved.replace(b"USER", b"HUMAN") if b"USER" in saved else saved + b" ")
    with pytest.raises(RunError, match=r"resuming would mix answers of two setups \(chat_template_sha256: "):
        run(settings(source, sample=2, model=spec), out, progress=False)
    template.write_bytes(saved)
    weights = next(model.glob("*.safetensors"))
    shutil.copyfile(weights, tmp_path / "w")
    weights.unlink()
    shutil.copyfile(tmp_path / "w", weights)  # same bytes, rewritten: a new file, as after a re-download
    with pytest.raises(RunError, match=r"weights_digest: 'local:"):
        run(settings(source, sample=2, model=spec), out, progress=False)


def test_a_second_process_on_the_same_shard_is_refused(tmp_path):
    """Issue 15: two processes on one shard both answered (1312 of 1440 asked twice); now the part is
    locked while a writer holds it, and released on close (or when a killed process dies)."""
    from vignette_bench.eval.runtime.runlog import PartWriter, ShardBusy

    path = tmp_path / "log" / "part-00000.jsonl"
    first = PartWriter(path)
    with pytest.raises(ShardBusy, match=r"another process is answering this shard now"):
        PartWriter(path)
    first.close()
    PartWriter(path).close()  # free again
    assert not list(path.parent.glob("*.lock"))  # a writer deletes its lock file while it holds it


def test_a_lock_file_deleted_by_its_last_holder_is_not_trusted(tmp_path, monkeypatch):
    """Between our open and our flock of the lock file, its last holder may delete it (closing): the lock we
    then get is on a deleted file and guards nothing, so the writer takes the file at the path instead."""
    import fcntl
    import os

    from vignette_bench.eval.runtime import runlog

    path = tmp_path / "part-00000.jsonl"
    lock_path = path.with_name(path.name + ".lock")
    real_flock, calls = fcntl.flock, []

    def flock_after_the_holder_deleted_it(fd: int, op: int) -> None:
        calls.append(fd)
        if len(calls) == 1:
            lock_path.unlink()  # the previous holder closes between our open and our flock
        real_flock(fd, op)

    monkeypatch.setattr(runlog.fcntl, "flock", flock_after_the_holder_deleted_it)
    writer = runlog.PartWriter(path)
    assert len(calls) == 2  # the first lock was on the deleted file: taken again on the file at the path
    assert os.fstat(writer._lock.fileno()).st_ino == os.stat(lock_path).st_ino
    writer.close()
    assert not lock_path.exists()
