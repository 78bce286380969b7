"""Reading the render index must not crash the interpreter at exit.

pyarrow 26 aborts at shutdown ("terminate called without an active exception", exit 134) in most
processes that did a threaded parquet read from an in-memory file; vignette reads the index that
way. A CLI that exits 134 instead of its own code breaks scripts and job arrays.
"""

import subprocess
import sys

from tests import REPO_ROOT
from vignette_bench.dataset_builder.sample import build_sample

ROOT = REPO_ROOT


def test_cli_exit_codes_survive_interpreter_shutdown(tmp_path):
    source = build_sample(tmp_path / "src", size=64, identities=("muslim", "hindu"), activities=("cooking",))
    for _ in range(5):  # the abort hit about 8 runs in 10 before the fix
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "vignette_bench",
                "show",
                "--config",
                "identity_contrast",
                "--index",
                "0",
                "--out",
                str(tmp_path / "x.png"),
                "--source",
                str(source),
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
        )
        assert out.returncode == 2, out.stderr  # the render is missing: our error, our exit code
        assert "terminate called" not in out.stderr


def test_a_reader_that_stops_early_gets_no_traceback():
    """`vignette --help | head -1`: the pipe closes before the help is written; the CLI exits as a command killed
    by SIGPIPE does (141), with nothing on stderr."""
    import os

    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write
    try:
        out = subprocess.run(
            [sys.executable, "-m", "vignette_bench", "--help"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert out.returncode == 141 and out.stderr == "", out.stderr
