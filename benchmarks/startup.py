"""CPU seconds of `vignette --help` and of every `vignette COMMAND --help`, each in a fresh process.

    .venv/bin/python benchmarks/startup.py [--rounds 3]

Each command runs as `python -c "from vignette_bench.cli import main; main([... '--help'])"` (what the
`vignette` entry point does), best of --rounds; CPU = user + system of the child (RUSAGE_CHILDREN),
interpreter start-up included. Also printed: `import vignette` and `vignette.load_dataset` (first
call on a small placeholder source, built once in a temporary folder), with the largest imports by
cumulative time from `-X importtime`.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from vignette_bench.cli import COMMANDS, Group  # noqa: E402


def cpu_of(code: str, *argv: str) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code, *argv], check=True, capture_output=True, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def top_imports(code: str, *argv: str, n: int = 10) -> list[tuple[str, float]]:
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code, *argv], capture_output=True, text=True, cwd=ROOT
    )
    rows = []
    for line in out.stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "cumulative" not in line:
            _, cumulative, name = line.split("|")
            if "." not in name.strip():  # packages, at any depth (a package's time includes what it imports)
                rows.append((name.strip(), int(cumulative) / 1e6))
    return sorted(rows, key=lambda r: -r[1])[:n]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    words: list[list[str]] = [[]]
    for name, entry in COMMANDS.items():
        words += [[name], *([name, s] for s in entry.commands)] if isinstance(entry, Group) else [[name]]
    helper = "import sys; from vignette_bench.cli import main; main(sys.argv[1:] + ['--help'])"
    best = {" ".join(w): float("inf") for w in words}
    for _ in range(args.rounds):  # interleaved: each round runs every command once
        for w in words:
            best[" ".join(w)] = min(best[" ".join(w)], cpu_of(helper, *w))
    print(f"CPU seconds per `vignette ... --help` (fresh process, best of {args.rounds}):")
    for name, seconds in best.items():
        print(f"  vignette {name + ' ' if name else ''}--help{'':<{max(0, 26 - len(name))}} {seconds:.3f}")
    print(f"  max {max(best.values()):.3f} s")
    python = min(cpu_of("pass") for _ in range(args.rounds))
    print(f"  (a bare `python -c pass`: {python:.3f} s)")

    with tempfile.TemporaryDirectory() as tmp:
        from vignette_bench.dataset_builder.sample import build_sample

        source = build_sample(Path(tmp) / "src", size=64, news=False, specs=False, reduced=False)
        load = (
            "import sys, vignette; vignette.load_dataset(sys.argv[1], 'identity_contrast', "
            "cache_dir=sys.argv[2], dimensions='religion')"
        )
        for label, code, argv in (
            ("import vignette", "import vignette", ()),
            ("vignette.load_dataset (first call, small source)", load, (str(source), str(Path(tmp) / "cache"))),
        ):
            seconds = min(cpu_of(code, *argv) for _ in range(args.rounds))
            print(f"{label}: {seconds:.2f} s CPU; largest imports (cumulative s, -X importtime):")
            print("  " + ", ".join(f"{m} {s:.2f}" for m, s in top_imports(code, *argv)))


if __name__ == "__main__":
    main()
