"""The options every `vignette` command spells the same way, and the spellings no command may use.

One idea, one flag:

``--source``  what a command reads: a source folder, fsspec URL or Hub dataset id
``--out``     only what a command creates (or adds to): a folder or file it writes
``--size``    an image size, ``WxH`` (or ``N`` for ``NxN``)
``--limit``   how many: the first / a sample of N items, questions or pairs
``--repo``    a Hub repo id (or owner)
``--seed``    the seed of everything random in the command
``--model``   a model spec (docs/eval.md), or a diffusers pipeline for ``build render``
``RUN``       run folders (``vignette run --out``) are positional, ``RUN`` or ``RUN ...``

``--sample`` is only the sampling plan of ``vignette run``; ``--items`` only the items.json of
``vignette annotate score``. `tests/test_cli_vocabulary.py` walks every command and refuses a flag
that is neither shared here nor declared for its command, and every spelling in `REFUSED`; `vignette`
answers a spelling in `REFUSED` or `RENAMED` with ``error: OLD is now NEW`` (`old_spelling`).
"""

from __future__ import annotations

import argparse
from typing import Any

SHARED = ("--source", "--out", "--size", "--limit", "--repo", "--seed", "--model")

# old or tempting spellings -> the one to use
REFUSED = {
    "--image-size": "--size",
    "--side": "--size",
    "--resolution": "--size",
    "--n": "--limit",
    "--count": "--limit",
    "--max-items": "--limit",
    "--repo-id": "--repo",
    "--dataset-id": "--repo",
    "--input": "--source",
    "--src": "--source",
    "--output": "--out",
    "--run-dir": "RUN (positional)",
    "--spec": "--model",
}

# a command's own old spellings (docs/cli.md, "Renamed"), beyond REFUSED, which holds for every command
RENAMED: dict[str, dict[str, str]] = {
    "merge": {"--check": "--dry-run"},
    "build reduce": {"--out": "--source", "--side": "--size"},
    "build specs": {"--out": "--source"},
    "build news": {"--sample": "--placeholder"},
    "build photos": {"--labels": "--rows"},  # --label RUN=NAME is report's and compare's: one word, one idea
    "news demo": {"--items": "--limit"},
    "leaderboard export": {"--source-url": "--link"},
    "upload": {"--metrics-dir": "--metrics"},
}


def old_spelling(command: str, args: list[str], parser: argparse.ArgumentParser) -> str | None:
    """``"--image-size is now --size"`` for the first old spelling in `args` that `parser` does not take.

    Checked before argparse parses, which would answer a bare "unrecognized arguments" (or, worse, read
    ``--n`` as an abbreviation of a longer flag such as ``--news``)."""
    taken = set(parser._option_string_actions)
    taken |= {f"{a.metavar} (positional)" for a in parser._actions if not a.option_strings}
    table = {**REFUSED, **RENAMED.get(command, {})}
    for arg in args:
        if arg == "--":
            break
        flag = arg.split("=", 1)[0]
        if flag in table and flag not in taken and table[flag] in taken:  # a hint only to what this command takes
            return f"{flag} is now {table[flag]}"
    return None


def parse_size(text: str) -> tuple[int, int]:
    """``WxH`` or ``N`` (``NxN``) as ``(width, height)``; an argparse type."""
    w, sep, h = text.strip().lower().partition("x")
    try:
        size = (int(w), int(h) if sep else int(w))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT or N, e.g. 672x336, got {text!r}") from None
    if min(size) < 1:
        raise argparse.ArgumentTypeError(f"width and height must be >= 1, got {text!r}")
    return size


def positive_int(text: str) -> int:
    """A whole number >= 1; an argparse type."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}")
    return value


def source(p: argparse.ArgumentParser, help: str, **kw: Any) -> None:
    p.add_argument("--source", metavar="SOURCE", help=help, **kw)


def out(p: argparse.ArgumentParser, help: str, **kw: Any) -> None:
    p.add_argument("--out", metavar="OUT", help=help, **kw)


def size(p: argparse.ArgumentParser, help: str, **kw: Any) -> None:
    p.add_argument("--size", type=parse_size, metavar="WxH", help=help, **kw)


def limit(p: argparse.ArgumentParser, help: str, **kw: Any) -> None:
    p.add_argument("--limit", type=int, metavar="N", help=help, **kw)


def repo(p: argparse.ArgumentParser, help: str, **kw: Any) -> None:
    p.add_argument("--repo", metavar="REPO", help=help, **kw)


def seed(p: argparse.ArgumentParser, help: str = "seed (default 0)", **kw: Any) -> None:
    p.add_argument("--seed", type=int, default=kw.pop("default", 0), help=help, **kw)


def model(p: argparse.ArgumentParser, help: str, **kw: Any) -> None:
    p.add_argument("--model", metavar="SPEC", help=help, **kw)


def runs(p: argparse.ArgumentParser, help: str, nargs: str | None = None) -> None:
    """Run folders, positional: ``RUN`` (nargs None) or ``RUN [RUN ...]`` (nargs "+")."""
    if nargs is None:
        p.add_argument("run", metavar="RUN", help=help)
    else:
        p.add_argument("runs", metavar="RUN", nargs=nargs, help=help)
