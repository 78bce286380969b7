"""`vignette`: one command for every job.

Each job is a module with ``add_arguments(parser)`` and ``main(args) -> int`` (a module that holds
several jobs names them by an attribute prefix: ``create_add_arguments``, ``create_main``); a module
is imported only when its command runs, so ``vignette --help`` and ``vignette info`` start without
torch, diffusers or transformers. Options share one vocabulary (`vignette_bench.cli_options`). To
add a job, add one line to ``COMMANDS`` (or a group).

Errors: a `vignette_bench.errors.VignetteError` escaping a job prints ``error: <message>`` on stderr
and exits 2 (``VIGNETTE_DEBUG=1``: the traceback instead); anything else is a bug and keeps its
traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Command:
    """A job: the module whose ``{attr}add_arguments(parser)`` and ``{attr}main(args)`` run it."""

    module: str
    help: str
    attr: str = ""


@dataclass(frozen=True)
class Group:
    """Jobs under one word (``vignette build render``)."""

    help: str
    commands: Mapping[str, Command] = field(default_factory=dict)


BUILD = "vignette_bench.dataset_builder"
EVAL = "vignette_bench.eval"
LEADERBOARD = f"{EVAL}.leaderboard.command"

COMMANDS: dict[str, Command | Group] = {
    "build": Group(
        "build a source: render, check, shard, verify; a placeholder sample; news",
        {
            "render": Command(
                f"{BUILD}.render", "render images with a diffusers text-to-image pipeline (resumable, split by rank)"
            ),
            "check": Command(
                f"{BUILD}.check", "check renders: decodable, size, not blank, no near-duplicates, a face visible"
            ),
            "shard": Command(f"{BUILD}.shard", "pack renders into WebDataset shards and write renders/index.parquet"),
            "verify": Command(f"{BUILD}.verify", "check that a source's index matches its shard bytes"),
            "sample": Command(f"{BUILD}.sample", "build a small placeholder source folder (no model needed)"),
            "photos": Command(f"{BUILD}.photos", "your own labelled photos as a source in the renders' layout"),
            "news": Command(f"{BUILD}.news", "package the news subset (images + rows -> parquet shards)"),
            "reduce": Command(
                f"{BUILD}.reduced", "a reduced copy of every render, sized for composition (~4x faster pairs)"
            ),
            "specs": Command(
                f"{BUILD}.pair_specs", "the pair configs' rows without images as parquet (plain datasets configs)"
            ),
        },
    ),
    "info": Command("vignette_bench.loader.cli", "pair configs of a source and their sizes", attr="info_"),
    "show": Command("vignette_bench.loader.cli", "compose one pair and save it as an image", attr="show_"),
    "run": Command(f"{EVAL}.runtime.run", "put the benchmark's questions to a model (resumable, sharded)"),
    "merge": Command(f"{EVAL}.runtime.merge", "join a run's log parts into responses.parquet, checking for gaps"),
    "report": Command(f"{EVAL}.report.command", "tables, figures and verdicts from one or more runs"),
    "compare": Command(f"{EVAL}.compare.command", "two runs identity by identity: deltas with cluster-robust CIs"),
    "annotate": Group(
        "human validation of renders and pairs (papers/002, tables 9 and 10)",
        {
            "export": Command("vignette_bench.annotate.export", "a seeded sample as one offline HTML annotation page"),
            "score": Command("vignette_bench.annotate.score", "agreement % and Cohen's/Fleiss' kappa with CIs"),
        },
    ),
    "leaderboard": Group(
        "create, validate, verify, build and export leaderboard entries",
        {
            "create": Command(LEADERBOARD, "make an entry from a finished run", attr="create_"),
            "validate": Command(LEADERBOARD, "recompute an entry's numbers from its responses", attr="validate_"),
            "verify": Command(
                f"{EVAL}.leaderboard.verify", "re-ask a random subset of an entry's questions with the named model"
            ),
            "build": Command(LEADERBOARD, "validate every entry and render the board", attr="build_"),
            "export": Command(LEADERBOARD, "write the Hub model-repo eval-results file for an entry", attr="export_"),
        },
    ),
    "news": Group(
        "the news subset: open-ended answers, the LLM judge, results",
        {
            "answer": Command(f"{EVAL}.news.answer", "answer the news questions in JSON with a model"),
            "judge": Command(f"{EVAL}.news.judge", "score answers with an LLM judge (bias, faithfulness, relevance)"),
            "results": Command(f"{EVAL}.news.results", "results per model and attribute from judgements"),
            "demo": Command(f"{EVAL}.news.demo", "offline news demo: placeholder sample, tiny VLM answers and judge"),
        },
    ),
    "explain": Command(f"{EVAL}.explain.pictures", "attention of an answer over the pair image, three panels"),
    "serve": Command(f"{EVAL}.serve.server", "serve a model behind an OpenAI-compatible chat API"),
    "upload": Command("vignette_bench.upload.command", "push a source, cards, metric modules or results to the Hub"),
    "demo": Command(f"{EVAL}.demo", "the offline demo: placeholder source, random and tiny models, report"),
}


def _usage(words: list[str], table: Mapping[str, Command | Group], help_text: str) -> str:
    width = max(map(len, table))
    lines = [f"usage: {' '.join(words)} COMMAND [ARGS...]", "", help_text, "", "commands:"]
    for name, entry in table.items():
        lines.append(f"  {name:<{width}}  {entry.help}")
    lines += ["", f"`{' '.join(words)} COMMAND --help` shows a command's options."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    words = ["vignette"]
    table: Mapping[str, Command | Group] = COMMANDS
    help_text = "Audit social bias in vision-language models with the VIGNETTE benchmark."
    while True:
        if not args or args[0] in ("-h", "--help"):
            print(_usage(words, table, help_text))
            return 0 if args else 2
        if args[0] == "--version" and words == ["vignette"]:
            from vignette_bench import __version__

            print(f"vignette {__version__}")
            return 0
        name, args = args[0], args[1:]
        entry = table.get(name)
        if entry is None:
            print(f"{' '.join(words)}: unknown command {name!r}; choose from {', '.join(table)}", file=sys.stderr)
            return 2
        words.append(name)
        if isinstance(entry, Group):
            table, help_text = entry.commands, entry.help
            continue
        return _run(entry, words, args)


def _run(entry: Command, words: list[str], args: list[str]) -> int:
    from vignette_bench.errors import VignetteError, known_failure

    module = importlib.import_module(entry.module)
    prog = " ".join(words)
    job = getattr(module, f"{entry.attr}main")
    parser = argparse.ArgumentParser(
        prog=prog,
        description=(job.__doc__ if entry.attr else None) or module.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    getattr(module, f"{entry.attr}add_arguments")(parser)
    try:
        parsed = parser.parse_args(args)
    except SystemExit as done:  # --help, or a usage error argparse has already printed
        return done.code if isinstance(done.code, int) else 2
    try:
        return int(job(parsed) or 0)
    except VignetteError as error:
        if os.environ.get("VIGNETTE_DEBUG", "") not in ("", "0"):
            raise
        print(f"error: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # a file, network or image failure a user can act on; anything else is a bug
        message = known_failure(error)
        if message is None or os.environ.get("VIGNETTE_DEBUG", "") not in ("", "0"):
            raise
        print(f"error: {message} (VIGNETTE_DEBUG=1 shows where)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
