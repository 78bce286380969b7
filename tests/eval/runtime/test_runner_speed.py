"""The runner's own cost (issue 25, item 3): durability by time, the final merge from what the run holds,
and no scipy unless `--sample auto`. The crash guarantees themselves are tests/eval/runtime/test_run.py's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from vignette_bench.dataset_builder.sample import build_sample
from vignette_bench.eval.runtime import merge as merge_module
from vignette_bench.eval.runtime.questions import Variants
from vignette_bench.eval.runtime.run import RunSettings, Shard, run
from vignette_bench.eval.runtime.runlog import PartWriter
from vignette_bench.formats.jsonl import iter_part

ROWS = [{"question_id": str(i), "pair_id": "p"} for i in range(3)]


def test_fsync_at_most_every_interval_and_at_close(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    path = tmp_path / "part-00000.jsonl"
    with PartWriter(path, sync_every=3600) as writer:
        for row in ROWS:
            writer.append([row])
            # the OS has every batch before append returns: another reader (or a SIGKILL) sees it
            assert [r["question_id"] for r in iter_part(path)][-1] == row["question_id"]
        assert writer.syncs == 0 and not synced
    assert len(synced) == 1  # at close
    with PartWriter(path, sync_every=0) as writer:  # an interval of 0: every batch, as before
        writer.append(ROWS[:1])
        writer.append(ROWS[1:])
        assert writer.syncs == 2
    assert len(list(iter_part(path))) == 6


def test_a_batch_is_fsynced_within_the_interval_even_if_no_other_batch_comes(tmp_path: Path) -> None:
    """Power loss loses at most the last interval: a batch appended right after an fsync is fsync'ed by a
    timer when the interval is up, not only when the next batch (maybe minutes later) arrives."""
    import time

    with PartWriter(tmp_path / "part-00000.jsonl", sync_every=0.2) as writer:
        writer.append(ROWS[:1])  # within the interval of the writer's start: deferred
        assert writer.syncs == 0
        deadline = time.monotonic() + 30
        while writer.syncs == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert writer.syncs == 1


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("src")
    return str(build_sample(folder, size=48, identities=("man", "woman", "old", "young"), activities=("cooking",)))


def _settings(source: str) -> RunSettings:
    return RunSettings(
        source=source,
        config="portraits",
        model="random",
        seed=1,
        sample=3,
        image_size=(96, 48),
        variants=Variants((0,), ("identity",), ("image", "text")),
    )


def test_the_final_merge_takes_its_own_part_from_memory(
    source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoded: list[Path] = []
    real = merge_module.iter_part
    monkeypatch.setattr(merge_module, "iter_part", lambda path: (decoded.append(path), real(path))[1])
    out = tmp_path / "one"
    result = run(_settings(source), out, progress=False)
    assert result.responses is not None and decoded == []  # its own part: not decoded again
    by_hand = tmp_path / "by-hand.parquet"
    os.replace(result.responses, by_hand)
    merge_module.merge(out)  # `vignette merge` reads the part from disk: the same table
    assert decoded and pq.read_table(by_hand).equals(pq.read_table(out / "responses.parquet"))


def test_a_rank_that_finishes_last_reads_only_the_other_ranks_parts(
    source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "two"
    first = run(_settings(source), out, shard=Shard(0, 2), progress=False)
    assert first.responses is None  # rank 1 has not run
    decoded: list[str] = []
    real = merge_module.iter_part
    monkeypatch.setattr(merge_module, "iter_part", lambda path: (decoded.append(path.name), real(path))[1])
    second = run(_settings(source), out, shard=Shard(1, 2), progress=False)
    assert second.responses is not None and decoded == ["part-00000.jsonl"]
    single = run(_settings(source), tmp_path / "single", progress=False)
    assert single.responses is not None
    assert pq.read_table(second.responses).equals(pq.read_table(single.responses))


def test_the_runner_imports_scipy_only_for_sample_auto() -> None:
    code = (
        "import sys, vignette_bench.eval.runtime.run\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy')))"
    )
    out = subprocess.run([sys.executable, "-c", "import json\n" + code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout) == []
