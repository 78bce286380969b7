"""`vignette --help` and every `vignette COMMAND --help` start without a heavy library (issue 25).

One fresh interpreter, run with ``-X importtime``, builds every command's parser through
`vignette_bench.cli.main` (as the shell does); its import log must not name datasets, pandas, pyarrow,
scipy, torch, matplotlib or transformers. This checks behaviour, not timing: a top-level import of a
heavy library (or pydantic, fsspec, numpy) in a module that a parser needs fails here on any machine. The CPU time per ``--help``
is measured by benchmarks/startup.py.
"""

from __future__ import annotations

import subprocess
import sys

from vignette_bench.cli import COMMANDS, Group

HEAVY = ("datasets", "pandas", "pyarrow", "scipy", "torch", "matplotlib", "transformers")
# also kept out of every parser (each costs 0.05-0.15 s of CPU: `vignette run --help` was 0.26 s with them;
# the names and defaults a parser shows come from vignette_bench/formats/vocabulary.py)
HEAVY += ("pydantic", "fsspec", "numpy")


def every_command() -> list[list[str]]:
    words: list[list[str]] = [[]]
    for name, entry in COMMANDS.items():
        if isinstance(entry, Group):
            words += [[name]] + [[name, sub] for sub in entry.commands]
        else:
            words.append([name])
    return words


def test_no_parser_imports_a_heavy_library() -> None:
    code = (
        "import contextlib, io, sys\n"
        "from vignette_bench.cli import main\n"
        f"for words in {every_command()!r}:\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        assert main([*words, '--help']) == 0, words\n"
    )
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
    heavy = sorted(m for m in imported if m.split(".")[0] in HEAVY)
    assert not heavy, f"building the parsers imported {heavy[:10]}: import them inside the job, not at module level"


def test_a_usage_error_imports_nothing_heavy_either() -> None:
    code = (
        "import sys\nfrom vignette_bench.cli import main\n"
        "assert main(['run', '--size', 'big']) == 2\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"
