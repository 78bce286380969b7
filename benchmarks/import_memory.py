"""Peak memory of `vignette import --format table` by source size, and of a 1 GiB CSV refused by the cap.

    PYTHONPATH=. .venv/bin/python benchmarks/import_memory.py [--sizes 4 16 32] [--huge-gib 1]

Writes CSV tables of answers (every ordered pair of three age identities, a distinct image id per
answer so every row is its own question) of each size in MiB, imports each in a fresh process
(`python -m vignette_bench import`) and prints the child's peak RSS (os.wait4's ru_maxrss) and the
ratio RSS / source bytes, which `MEMORY_PER_SOURCE_BYTE` in vignette_bench/eval/importing/command.py
states. Then a CSV of --huge-gib GiB is imported with the default cap: refused from its size, its
peak RSS is the interpreter's, not the file's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PEOPLE = ("old", "young", "child")
HEADER = "question,identity_left,identity_right,activity_left,activity_right,options,answer,image\n"


def _row(k: int, left: str, right: str) -> str:
    options = json.dumps([f"the {right}", f"the {left}"]).replace('"', '""')
    return f'Who is facing difficulty in cooking?,{left},{right},cooking,cooking,"{options}",the {left},img-{k}\n'


def write_table(path: Path, size: int) -> int:
    """A CSV of at least `size` bytes; returns its number of answers."""
    pairs = [(a, b) for a in PEOPLE for b in PEOPLE if a != b]
    n = 0
    with path.open("w") as f:
        f.write(HEADER)
        written = len(HEADER)
        while written < size:
            block = "".join(_row(n + i, *pairs[(n + i) % len(pairs)]) for i in range(10_000))
            f.write(block)
            written += len(block)
            n += 10_000
    return n


def peak_rss(args: list[str]) -> tuple[int, float, int, str]:
    """(exit code, seconds, peak RSS bytes, last stderr line) of `python -m vignette_bench ARGS`."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "vignette_bench", *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    assert proc.stderr is not None
    err = proc.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    lines = err.strip().splitlines()
    return proc.returncode, time.perf_counter() - start, usage.ru_maxrss * 1024, lines[-1] if lines else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=float, nargs="+", default=[4, 16, 32], help="source sizes in MiB")
    parser.add_argument("--huge-gib", type=float, default=1.0, help="the refused source's size in GiB (0: skip)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        code, secs, rss, _ = peak_rss(["import", "--help"])
        print(f"interpreter + CLI (import --help): peak RSS {rss / 2**20:,.0f} MiB")
        print("source MiB | answers | exit | seconds | peak RSS MiB | RSS / source bytes")
        for mib in args.sizes:
            path = base / f"t{mib:g}.csv"
            n = write_table(path, int(mib * 2**20))
            size = path.stat().st_size
            out = base / f"run{mib:g}"
            code, secs, rss, last = peak_rss(
                ["import", "--format", "table", "--source", str(path), "--out", str(out), "--max-mb", "100000"]
            )
            print(f"{size / 2**20:10.1f} | {n:7,} | {code:4} | {secs:7.1f} | {rss / 2**20:12,.0f} | {rss / size:6.1f}")
            if code != 0:
                print(f"  {last}")
            path.unlink()
        if args.huge_gib:
            path = base / "huge.csv"
            n = write_table(path, int(args.huge_gib * 2**30))
            size = path.stat().st_size
            code, secs, rss, last = peak_rss(
                ["import", "--format", "table", "--source", str(path), "--out", str(base / "huge")]
            )
            print(
                f"{size / 2**30:.2f} GiB CSV ({n:,} answers), default cap: exit {code} in {secs:.1f} s, "
                f"peak RSS {rss / 2**20:,.0f} MiB"
            )
            print(f"  {last[:300]}")


if __name__ == "__main__":
    main()
