"""`vignette`: one command for every job.

Each job is a module with ``add_arguments(parser)`` and ``main(args) -> int``, or with
``main(argv) -> int`` that parses its own arguments; a module is
imported only when its command runs, so ``vignette --help`` and ``vignette info`` start without
torch, diffusers or transformers. To add a job, add one line to ``COMMANDS`` (or a group).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Command:
    """A job: the module whose ``main(argv)`` runs it, and argv words put before the user's."""

    module: str
    help: str
    prefix: tuple[str, ...] = ()


@dataclass(frozen=True)
class Group:
    """Jobs under one word (``vignette build render``)."""

    help: str
    commands: Mapping[str, Command] = field(default_factory=dict)


BUILD = "vignette_bench.dataset_builder"
EVAL = "vignette_bench.eval"

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
    "info": Command("vignette_bench.loader.cli", "pair configs of a source and their sizes", ("info",)),
    "show": Command("vignette_bench.loader.cli", "compose one pair and save it as an image", ("show",)),
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
    "leaderboard": Command(f"{EVAL}.leaderboard.command", "create, validate, build and export leaderboard entries"),
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
        module = importlib.import_module(entry.module)
        prog = " ".join(words)
        if hasattr(module, "add_arguments"):  # the module declares its options; we parse them
            parser = argparse.ArgumentParser(
                prog=prog, description=module.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
            )
            module.add_arguments(parser)
            return int(module.main(parser.parse_args([*entry.prefix, *args])) or 0)
        sys.argv[0] = prog  # argparse's default prog for a module that parses its own argv
        return int(module.main([*entry.prefix, *args]) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
