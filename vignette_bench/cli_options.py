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
``vignette annotate score``. `VOCABULARY` holds every flag several commands take (these helpers' and
``--retry-invalid``, ``--image-format``, ``--batch-size`` ...) with the idea's other spellings.
`tests/test_cli_vocabulary.py` walks every command and refuses a flag that is neither shared here nor
declared for its command, a flag two commands take with two meanings or missing from `VOCABULARY`, and
every other or old spelling; `vignette` answers one (`REFUSED`, `RENAMED`) with ``error: OLD is now NEW``
(`old_spelling`), and a second ``KEY=VALUE`` after a flag that takes one per use with how to repeat it.
"""

from __future__ import annotations

import argparse
from typing import Any

SHARED = ("--source", "--out", "--size", "--limit", "--repo", "--seed", "--model")

# One idea, one spelling (docs/cli.md, "One vocabulary"): every flag that more than one command takes (or that
# replaced other spellings) -> what it means, and the idea's other spellings, which no command takes.
# tests/test_cli_vocabulary.py walks every command's parser: a flag two commands take is declared here and
# means one thing in both (the same action, the same choices); no command takes another spelling.
VOCABULARY: dict[str, tuple[str, tuple[str, ...]]] = {
    "--source": ("what the command reads: a source folder, fsspec URL or Hub dataset id", ("--input", "--src")),
    "--out": ("only what the command creates (or adds to)", ("--output",)),
    "--size": ("an image size, WxH (N: NxN)", ("--image-size", "--side", "--resolution")),
    "--limit": ("how many items, questions or pairs", ("--n", "--count", "--max-items")),
    "--repo": ("a Hub repo id (or owner)", ("--repo-id", "--dataset-id")),
    "--seed": ("the seed of what is drawn", ()),
    "--model": ("a model spec (docs/adapters.md); a diffusers pipeline for build render", ("--spec",)),
    "--config": ("one pair config", ()),
    "--configs": ("several pair configs, comma-separated", ()),
    "--retry-invalid": (
        "do again what came out invalid: re-ask invalid answers (run, news answer), re-judge failed "
        "judgements (news judge), re-render renders that failed the check (build check)",
        ("--retry-failures", "--rerender-failures", "--retry-failed"),
    ),
    "--image-format": ("the image codec a build writes: jpeg or webp", ("--codec", "--image-codec")),
    "--format": ("the kind of answers `import` reads (vignette-csv, table, inspect, lmms-eval)", ("--input-format",)),
    "--rows": ("the table a build reads, one image per row", ("--labels",)),
    "--label": ("RUN=NAME: the name a page gives a run's model, repeated", ()),
    "--entries": ("the leaderboard entries folder", ()),
    "--answers": ("news answers files, space-separated", ()),
    "--judge": ("the judge's model spec (news)", ()),
    "--batch-size": ("items per model call", ()),
    "--device": ("the torch device (auto: cuda:$LOCAL_RANK if a GPU is there)", ()),
    "--shard": ("i/N: this process takes the i-th of N shares", ()),
    "--dry-run": ("print what would be done; write nothing", ()),
    "--private": ("create the Hub repos private", ()),
    "--stage": ("the folder files are staged in before an upload", ()),
    "--quality": ("the encoder quality of the images a build writes", ()),
    "--taxonomy": ("the taxonomy folder (default: the packaged one)", ()),
    "--identities": ("identity names, comma-separated", ()),
    "--activities": ("activity names, comma-separated", ()),
    "--renders-per-cell": ("k renders of every cell and portrait", ()),
    "--rows-per-shard": ("rows per parquet file a build writes", ("--rows-per-file",)),
    "--judge-max-new-tokens": ("the token budget of a judgement (news)", ()),
    "--read-other-sources": ("let an entry name a source other than the board's", ()),
}

# old or tempting spellings -> the one to use (every command; a hint only where the command takes the new one)
REFUSED = {old: new for new, (_, others) in VOCABULARY.items() for old in others} | {"--run-dir": "RUN (positional)"}

# a command's own old spellings (docs/cli.md, "Renamed"), beyond REFUSED; "X (positional)": a positional argument
RENAMED: dict[str, dict[str, str]] = {
    "merge": {"--check": "--dry-run"},
    "build verify": {"SOURCE (positional)": "--source"},
    "build reduce": {"--out": "--source", "--side": "--size"},
    "build specs": {"--out": "--source"},
    "build news": {"--sample": "--placeholder"},
    "build photos": {"--labels": "--rows"},  # --label RUN=NAME is report's and compare's: one word, one idea
    "build check": {"--table": "--out"},  # the table is what check creates
    "build shard": {"--format": "--image-format"},  # --format is the kind of answers `import` reads
    "build sample": {"--format": "--image-format"},
    "news judge": {"--max-new-tokens": "--judge-max-new-tokens"},  # as news demo, which also has the answerer's
    "news demo": {"--items": "--limit"},
    "leaderboard export": {"--source-url": "--link"},
    "upload metrics": {"--metrics-dir": "--metrics"},
    "upload results": {"--source": "--entries"},  # --source is a dataset source; entries are leaderboard files
}


def old_spelling(command: str, args: list[str], parser: argparse.ArgumentParser) -> str | None:
    """``"--image-size is now --size"`` for the first old spelling in `args` that `parser` does not take.

    Checked before argparse parses, which would answer a bare "unrecognized arguments" (or, worse, read
    ``--n`` as an abbreviation of a longer flag such as ``--news``). A stray word where the parser takes no
    positional is an old positional (``SOURCE (positional) is now --source``) or a second ``KEY=VALUE`` given
    to a flag that takes one per use (``--variants a=1 b=2``: repeat the flag)."""
    taken = set(parser._option_string_actions)
    taken |= {f"{a.metavar} (positional)" for a in parser._actions if not a.option_strings}
    table = {**REFUSED, **RENAMED.get(command, {})}
    for arg in args:
        if arg == "--":
            break
        flag = arg.split("=", 1)[0]
        if flag in table and flag not in taken and table[flag] in taken:  # a hint only to what this command takes
            return f"{flag} is now {table[flag]}"
    stray = _stray_word(args, parser)
    if stray is None:
        return None
    at, after = stray
    if after is not None and isinstance(after, argparse._AppendAction) and "=" in args[at]:
        flag, value = after.option_strings[-1], args[at - 1]
        value = value.split("=", 1)[1] if value.startswith("-") else value  # --flag=VALUE or --flag VALUE
        return f"{flag} takes one {after.metavar or 'value'} per use: repeat it ({flag} {value} {flag} {args[at]})"
    positional = [old for old in table if old.endswith(" (positional)") and table[old] in taken]
    return f"{positional[0]} is now {table[positional[0]]}" if positional else None


def _stray_word(args: list[str], parser: argparse.ArgumentParser) -> tuple[int, argparse.Action | None] | None:
    """Where the first word of `args` that is no option's value is, where `parser` takes no positional, and the
    option whose value came right before it (None: it came first, or after a flag without a value)."""
    if any(not a.option_strings for a in parser._actions):
        return None
    before: argparse.Action | None = None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return (i + 1, None) if i + 1 < len(args) else None
        if not arg.startswith("-") or arg == "-":
            return i, before
        action = parser._option_string_actions.get(arg.split("=", 1)[0])
        before = None
        if action is not None and "=" not in arg:
            takes = 1 if action.nargs in (None, "?") else action.nargs if isinstance(action.nargs, int) else -1
            if takes == -1:  # "+" or "*": every word up to the next flag
                while i + 1 < len(args) and not args[i + 1].startswith("-"):
                    i += 1
            elif action.nargs == "?" and (i + 1 >= len(args) or args[i + 1].startswith("-")):
                takes = 0
            i += takes
            before = action if takes else None
        elif action is not None:
            before = action
        i += 1
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
