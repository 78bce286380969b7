"""`vignette`: one command for every job.

Each job is one line of ``COMMANDS``: its parser ``add_arguments(parser)``, in a light module, and its
``main(args) -> int``, each named as ``"module:function"``; the job's module is imported only when its
command runs, so ``vignette --help`` and every ``vignette COMMAND --help`` start without torch, diffusers
or transformers. Options share one vocabulary (`vignette_bench.cli_options`). To
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Command:
    """A job: where its parser and its main live, each as ``"module:function"``; nothing else names them."""

    help: str
    # add_arguments(parser), in a light module (imports nothing heavy), so that `vignette COMMAND --help`
    # and usage errors never import the job (tests/test_startup.py checks that no parser imports a heavy library)
    arguments: str
    # main(args) -> int, imported only once the arguments parse; its help text is read from its source: the
    # function's docstring, or the module's for a function named `main` (a module of one job)
    main: str


@dataclass(frozen=True)
class Group:
    """Jobs under one word (``vignette build render``)."""

    help: str
    commands: Mapping[str, Command] = field(default_factory=dict)


BUILD = "vignette_bench.dataset_builder"
EVAL = "vignette_bench.eval"
LEADERBOARD = f"{EVAL}.leaderboard"
LOADER = "vignette_bench.loader.cli"

COMMANDS: dict[str, Command | Group] = {
    "build": Group(
        "build a source: render, check, shard, verify; a placeholder sample; news",
        {
            "render": Command(
                "render images with a diffusers text-to-image pipeline (resumable, split by rank)",
                arguments=f"{BUILD}.arguments:render_add_arguments",
                main=f"{BUILD}.render:main",
            ),
            "check": Command(
                "check renders: decodable, size, not blank, no near-duplicates, a face visible",
                arguments=f"{BUILD}.arguments:check_add_arguments",
                main=f"{BUILD}.check:main",
            ),
            "shard": Command(
                "pack renders into WebDataset shards and write renders/index.parquet",
                arguments=f"{BUILD}.arguments:shard_add_arguments",
                main=f"{BUILD}.shard:main",
            ),
            "verify": Command(
                "check that a source's index matches its shard bytes",
                arguments=f"{BUILD}.arguments:verify_add_arguments",
                main=f"{BUILD}.verify:main",
            ),
            "sample": Command(
                "build a small placeholder source folder (no model needed)",
                arguments=f"{BUILD}.arguments:sample_add_arguments",
                main=f"{BUILD}.sample:main",
            ),
            "photos": Command(
                "your own labelled photos as a source in the renders' layout",
                arguments=f"{BUILD}.arguments:photos_add_arguments",
                main=f"{BUILD}.photos:main",
            ),
            "news": Command(
                "package the news subset (images + rows -> parquet shards)",
                arguments=f"{BUILD}.news:add_arguments",
                main=f"{BUILD}.news:main",
            ),
            "reduce": Command(
                "a reduced copy of every render, sized for composition (~4x faster pairs)",
                arguments=f"{BUILD}.arguments:reduce_add_arguments",
                main=f"{BUILD}.reduced:main",
            ),
            "specs": Command(
                "the pair configs' rows without images as parquet (plain datasets configs)",
                arguments=f"{BUILD}.arguments:specs_add_arguments",
                main=f"{BUILD}.pair_specs:main",
            ),
            "protocol-sample": Command(
                "the leaderboard protocol's pairs with their images as parquet (plain datasets configs)",
                arguments=f"{BUILD}.arguments:protocol_add_arguments",
                main=f"{BUILD}.protocol_sample:main",
            ),
        },
    ),
    "info": Command(
        "pair configs of a source and their sizes",
        arguments=f"{LOADER}:info_add_arguments",
        main=f"{LOADER}:info_main",
    ),
    "show": Command(
        "compose one pair and save it as an image",
        arguments=f"{LOADER}:show_add_arguments",
        main=f"{LOADER}:show_main",
    ),
    "run": Command(
        "put the benchmark's questions to a model (resumable, sharded)",
        arguments=f"{EVAL}.runtime.arguments:run_add_arguments",
        main=f"{EVAL}.runtime.run:main",
    ),
    "merge": Command(
        "join a run's log parts into responses.parquet, checking for gaps",
        arguments=f"{EVAL}.runtime.arguments:merge_add_arguments",
        main=f"{EVAL}.runtime.merge:main",
    ),
    "import": Command(
        "answers collected elsewhere (the original VIGNETTE CSVs, a table) as a run folder",
        arguments=f"{EVAL}.importing.arguments:import_add_arguments",
        main=f"{EVAL}.importing.command:main",
    ),
    "report": Command(
        "tables, figures and verdicts from one or more runs",
        arguments=f"{EVAL}.report.arguments:report_add_arguments",
        main=f"{EVAL}.report.command:main",
    ),
    "compare": Command(
        "two runs identity by identity: deltas with cluster-robust CIs",
        arguments=f"{EVAL}.compare.arguments:compare_add_arguments",
        main=f"{EVAL}.compare.command:main",
    ),
    "annotate": Group(
        "human validation of renders and pairs (papers/002, tables 9 and 10)",
        {
            "export": Command(
                "a seeded sample as one offline HTML annotation page",
                arguments="vignette_bench.annotate.arguments:export_add_arguments",
                main="vignette_bench.annotate.export:main",
            ),
            "score": Command(
                "agreement % and Cohen's/Fleiss' kappa with CIs",
                arguments="vignette_bench.annotate.arguments:score_add_arguments",
                main="vignette_bench.annotate.score:main",
            ),
        },
    ),
    "leaderboard": Group(
        "create, validate, verify, build and export leaderboard entries; keygen, init and check-pr for maintainers",
        {
            "create": Command(
                "make an entry from a finished run",
                arguments=f"{LEADERBOARD}.arguments:create_add_arguments",
                main=f"{LEADERBOARD}.command:create_main",
            ),
            "validate": Command(
                "recompute an entry's numbers from its responses",
                arguments=f"{LEADERBOARD}.arguments:validate_add_arguments",
                main=f"{LEADERBOARD}.command:validate_main",
            ),
            "verify": Command(
                "re-ask a random subset of an entry's questions with the named model",
                arguments=f"{LEADERBOARD}.arguments:verify_add_arguments",
                main=f"{LEADERBOARD}.verify:main",
            ),
            "build": Command(
                "validate every entry and render the board",
                arguments=f"{LEADERBOARD}.arguments:build_add_arguments",
                main=f"{LEADERBOARD}.command:build_main",
            ),
            "export": Command(
                "write the Hub model-repo eval-results file for an entry",
                arguments=f"{LEADERBOARD}.arguments:export_add_arguments",
                main=f"{LEADERBOARD}.command:export_main",
            ),
            "keygen": Command(
                "make a maintainer key pair for signing verifications",
                arguments=f"{LEADERBOARD}.arguments:keygen_add_arguments",
                main=f"{LEADERBOARD}.verify:keygen_main",
            ),
            "init": Command(
                "make a board repository: entries, runs, maintainers.json and its CI workflow",
                arguments=f"{LEADERBOARD}.ci_arguments:init_add_arguments",
                main=f"{LEADERBOARD}.template:main",
            ),
            "check-pr": Command(
                "the board's CI: refuse a pull request that does more than add valid entries",
                arguments=f"{LEADERBOARD}.ci_arguments:check_pr_add_arguments",
                main=f"{LEADERBOARD}.checkpr:main",
            ),
        },
    ),
    "news": Group(
        "the news subset: open-ended answers, the LLM judge, results",
        {
            "answer": Command(
                "answer the news questions in JSON with a model",
                arguments=f"{EVAL}.news.arguments:answer_add_arguments",
                main=f"{EVAL}.news.answer:main",
            ),
            "judge": Command(
                "score answers with an LLM judge (bias, faithfulness, relevance)",
                arguments=f"{EVAL}.news.arguments:judge_add_arguments",
                main=f"{EVAL}.news.judge:main",
            ),
            "results": Command(
                "results per model and attribute from judgements",
                arguments=f"{EVAL}.news.arguments:results_add_arguments",
                main=f"{EVAL}.news.results:main",
            ),
            "demo": Command(
                "offline news demo: placeholder sample, tiny VLM answers and judge",
                arguments=f"{EVAL}.news.arguments:demo_add_arguments",
                main=f"{EVAL}.news.demo:main",
            ),
        },
    ),
    "explain": Command(
        "attention of an answer over the pair image, three panels",
        arguments=f"{EVAL}.explain.arguments:explain_add_arguments",
        main=f"{EVAL}.explain.pictures:main",
    ),
    "serve": Command(
        "serve a model behind an OpenAI-compatible chat API",
        arguments=f"{EVAL}.serve.server:add_arguments",
        main=f"{EVAL}.serve.server:main",
    ),
    "upload": Group(
        "push a source, metric modules or results to the Hub; complete a source's dataset card",
        {
            name: Command(
                help,
                arguments=f"vignette_bench.upload.arguments:{name}_add_arguments",
                main=f"vignette_bench.upload.command:{name}_main",
            )
            for name, help in (
                ("dataset", "a source folder (card, taxonomy, renders, index) to a Hub dataset repo"),
                ("metrics", "the metric modules, one gradio Space each (OWNER/<name>)"),
                ("results", "the leaderboard entries (validated) and the responses they cite to a Hub dataset repo"),
                ("card", "complete a source's README.md: pair counts, cautions, placeholders (local only)"),
            )
        },
    ),
    "demo": Command(
        "the offline demo: placeholder source, random and tiny models, report",
        arguments=f"{EVAL}.demo:add_arguments",
        main=f"{EVAL}.demo:main",
    ),
}


def _usage(words: list[str], table: Mapping[str, Command | Group], help_text: str) -> str:
    width = max(map(len, table))
    lines = [f"usage: {' '.join(words)} COMMAND [ARGS...]", "", help_text, "", "commands:"]
    for name, entry in table.items():
        lines.append(f"  {name:<{width}}  {entry.help}")
    lines += ["", f"`{' '.join(words)} COMMAND --help` shows a command's options."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    try:
        code = _main(argv)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit (where it would print a traceback)
        return code
    except BrokenPipeError:
        # the reader went away (`vignette --help | head -1`): nothing is lost that it wanted; exit as a shell
        # command killed by SIGPIPE does, without the traceback Python prints when flushing stdout at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + 13


def _main(argv: list[str] | None) -> int:
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


def _function(where: str) -> Callable[..., Any]:
    """The function a table entry names as ``"module:function"`` (imports the module)."""
    module, name = where.split(":")
    return getattr(importlib.import_module(module), name)


def _run(entry: Command, words: list[str], args: list[str]) -> int:
    from vignette_bench.errors import VignetteError, known_failure, missing_extra

    prog = " ".join(words)
    try:  # the parser's module only: the job's is imported once its arguments parse, so --help stays light
        add_arguments = _function(entry.arguments)
    except ModuleNotFoundError as error:  # a parser beside its job, in a module that needs an extra
        extra = missing_extra(error, f"`{prog}`")
        if extra is None or os.environ.get("VIGNETTE_DEBUG", "") not in ("", "0"):
            raise
        print(f"error: {extra}", file=sys.stderr)
        return 2
    module, function = entry.main.split(":")
    description = _docstring(module, None if function == "main" else function)
    parser = argparse.ArgumentParser(
        prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_arguments(parser)
    from vignette_bench.cli_options import old_spelling

    try:
        hint = old_spelling(" ".join(words[1:]), args, parser)
        if hint is not None:
            parser.error(hint)  # usage, then "PROG: error: --image-size is now --size"; exits 2
        parsed = parser.parse_args(args)
    except SystemExit as done:  # --help, or a usage error argparse has already printed
        return done.code if isinstance(done.code, int) else 2
    try:
        return int(_function(entry.main)(parsed) or 0)
    except ModuleNotFoundError as error:  # an optional package of a missing extra: name the extra to install
        extra = missing_extra(error, f"`{prog}`")
        if extra is None or os.environ.get("VIGNETTE_DEBUG", "") not in ("", "0"):
            raise
        print(f"error: {extra}", file=sys.stderr)
        return 2
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


def _docstring(module: str, function: str | None) -> str | None:
    """The docstring of `function` in `module` (or of the module), read from its source without importing it."""
    import ast
    import importlib.util

    spec = importlib.util.find_spec(module)
    get_source = getattr(spec.loader, "get_source", None) if spec is not None else None
    source = get_source(module) if get_source is not None else None  # a file, or a zip member: not run
    if source is None:
        return None
    tree = ast.parse(source)
    if function is not None:
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == function and ast.get_docstring(node):
                return ast.get_docstring(node, clean=False)
    return ast.get_docstring(tree, clean=False)


if __name__ == "__main__":
    raise SystemExit(main())
