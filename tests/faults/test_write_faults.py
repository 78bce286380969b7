"""A full disk under `leaderboard create` and `report` (issue 35), through the real CLI: each file is written
to a temporary name, fsync'ed and renamed (vignette_bench/atomic.py), so a write that fails midway leaves
the previous file byte for byte, or none, and no temporary; a rerun with room works."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.conftest import snapshot
from tests.faults.test_import_faults import _limited
from vignette_bench.cli import main as vignette


@pytest.fixture()
def run(source: Path, tmp_path: Path) -> Path:
    out = tmp_path / "board" / "runs" / "random"
    args = ["run", "--source", str(source), "--config", "identity_contrast", "--model", "random", "--out", str(out)]
    assert vignette([*args, "--no-progress"]) == 0
    return out


def test_leaderboard_create_on_a_full_disk_leaves_no_truncated_entry(run: Path, capsys) -> None:
    """Before: the error was reported, but a truncated 2,048-byte entry stayed and blocked the rerun."""
    entries = run.parents[1] / "entries"
    args = ["leaderboard", "create", str(run), "--by", "tester", "--out", str(entries)]
    err = _limited(args, 2048)
    assert err.startswith("error: ") and "Traceback" not in err, err
    assert not entries.exists() or list(entries.iterdir()) == []  # no entry, no temporary
    assert vignette(args) == 0  # the rerun, with room
    (entry,) = entries.iterdir()
    before = snapshot(entries)
    assert entry.stat().st_size > 2048
    _limited(args, 2048)  # failing again over an existing entry: the old one stays as it was
    assert snapshot(entries) == before
    assert vignette(["leaderboard", "validate", str(entry)]) == 0
    capsys.readouterr()


def test_report_on_a_full_disk_leaves_the_previous_report(run: Path, tmp_path: Path, capsys) -> None:
    """Before: a truncated report.md."""
    out = tmp_path / "report"
    args = ["report", str(run), "--out", str(out), "--figures", "none"]
    err = _limited(args, 4096)
    assert err.startswith("error: ") and "Traceback" not in err, err
    assert not (out / "report.md").exists() and not list(out.glob(".*.tmp"))
    assert vignette(args) == 0
    before = snapshot(out)
    assert (out / "report.md").stat().st_size > 4096
    _limited(args, 4096)
    assert snapshot(out) == before  # every file the previous report wrote, byte for byte; no temporary
    capsys.readouterr()
