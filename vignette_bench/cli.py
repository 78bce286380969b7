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
    # "module:function" of a light module's parser builder (imports nothing heavy), so that
    # `vignette COMMAND --help` and usage errors never import the job; default: the job's own
    # {attr}add_arguments (tests/test_startup.py checks that no parser imports a heavy library)
    arguments: str | None = None


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
                f"{BUILD}.render",
                "render images with a diffusers text-to-image pipeline (resumable, split by rank)",
                arguments=f"{BUILD}.arguments:render_add_arguments",
            ),
            "check": Command(
                f"{BUILD}.check",
                "check renders: decodable, size, not blank, no near-duplicates, a face visible",
                arguments=f"{BUILD}.arguments:check_add_arguments",
            ),
            "shard": Command(
                f"{BUILD}.shard",
                "pack renders into WebDataset shards and write renders/index.parquet",
                arguments=f"{BUILD}.arguments:shard_add_arguments",
            ),
            "verify": Command(
                f"{BUILD}.verify",
                "check that a source's index matches its shard bytes",
                arguments=f"{BUILD}.arguments:verify_add_arguments",
            ),
            "sample": Command(
                f"{BUILD}.sample",
                "build a small placeholder source folder (no model needed)",
                arguments=f"{BUILD}.arguments:sample_add_arguments",
            ),
            "photos": Command(
                f"{BUILD}.photos",
                "your own labelled photos as a source in the renders' layout",
                arguments=f"{BUILD}.arguments:photos_add_arguments",
            ),
            "news": Command(f"{BUILD}.news", "package the news subset (images + rows -> parquet shards)"),
            "reduce": Command(
                f"{BUILD}.reduced",
                "a reduced copy of every render, sized for composition (~4x faster pairs)",
                arguments=f"{BUILD}.arguments:reduce_add_arguments",
            ),
            "specs": Command(
                f"{BUILD}.pair_specs",
                "the pair configs' rows without images as parquet (plain datasets configs)",
                arguments=f"{BUILD}.arguments:specs_add_arguments",
            ),
            "protocol-sample": Command(
                f"{BUILD}.protocol_sample",
                "the leaderboard protocol's pairs with their images as parquet (plain datasets configs)",
                arguments=f"{BUILD}.arguments:protocol_add_arguments",
            ),
        },
    ),
    "info": Command("vignette_bench.loader.cli", "pair configs of a source and their sizes", attr="info_"),
    "show": Command("vignette_bench.loader.cli", "compose one pair and save it as an image", attr="show_"),
    "run": Command(
        f"{EVAL}.runtime.run",
        "put the benchmark's questions to a model (resumable, sharded)",
        arguments=f"{EVAL}.runtime.arguments:run_add_arguments",
    ),
    "merge": Command(
        f"{EVAL}.runtime.merge",
        "join a run's log parts into responses.parquet, checking for gaps",
        arguments=f"{EVAL}.runtime.arguments:merge_add_arguments",
    ),
    "import": Command(
        f"{EVAL}.importing.command",
        "answers collected elsewhere (the original VIGNETTE CSVs, a table) as a run folder",
        arguments=f"{EVAL}.importing.arguments:import_add_arguments",
    ),
    "report": Command(
        f"{EVAL}.report.command",
        "tables, figures and verdicts from one or more runs",
        arguments=f"{EVAL}.report.arguments:report_add_arguments",
    ),
    "compare": Command(
        f"{EVAL}.compare.command",
        "two runs identity by identity: deltas with cluster-robust CIs",
        arguments=f"{EVAL}.compare.arguments:compare_add_arguments",
    ),
    "annotate": Group(
        "human validation of renders and pairs (papers/002, tables 9 and 10)",
        {
            "export": Command("vignette_bench.annotate.export", "a seeded sample as one offline HTML annotation page"),
            "score": Command(
                "vignette_bench.annotate.score",
                "agreement % and Cohen's/Fleiss' kappa with CIs",
                arguments="vignette_bench.annotate.arguments:score_add_arguments",
            ),
        },
    ),
    "leaderboard": Group(
        "create, validate, verify, build and export leaderboard entries; keygen, init and check-pr for maintainers",
        {
            "create": Command(
                LEADERBOARD,
                "make an entry from a finished run",
                attr="create_",
                arguments=f"{EVAL}.leaderboard.arguments:create_add_arguments",
            ),
            "validate": Command(
                LEADERBOARD,
                "recompute an entry's numbers from its responses",
                attr="validate_",
                arguments=f"{EVAL}.leaderboard.arguments:validate_add_arguments",
            ),
            "verify": Command(
                f"{EVAL}.leaderboard.verify",
                "re-ask a random subset of an entry's questions with the named model",
                arguments=f"{EVAL}.leaderboard.arguments:verify_add_arguments",
            ),
            "build": Command(
                LEADERBOARD,
                "validate every entry and render the board",
                attr="build_",
                arguments=f"{EVAL}.leaderboard.arguments:build_add_arguments",
            ),
            "export": Command(
                LEADERBOARD,
                "write the Hub model-repo eval-results file for an entry",
                attr="export_",
                arguments=f"{EVAL}.leaderboard.arguments:export_add_arguments",
            ),
            "keygen": Command(
                f"{EVAL}.leaderboard.verify",
                "make a maintainer key pair for signing verifications",
                attr="keygen_",
                arguments=f"{EVAL}.leaderboard.arguments:keygen_add_arguments",
            ),
            "init": Command(
                f"{EVAL}.leaderboard.template",
                "make a board repository: entries, runs, maintainers.json and its CI workflow",
                arguments=f"{EVAL}.leaderboard.ci_arguments:init_add_arguments",
            ),
            "check-pr": Command(
                f"{EVAL}.leaderboard.checkpr",
                "the board's CI: refuse a pull request that does more than add valid entries",
                arguments=f"{EVAL}.leaderboard.ci_arguments:check_pr_add_arguments",
            ),
        },
    ),
    "news": Group(
        "the news subset: open-ended answers, the LLM judge, results",
        {
            "answer": Command(
                f"{EVAL}.news.answer",
                "answer the news questions in JSON with a model",
                arguments=f"{EVAL}.news.arguments:answer_add_arguments",
            ),
            "judge": Command(
                f"{EVAL}.news.judge",
                "score answers with an LLM judge (bias, faithfulness, relevance)",
                arguments=f"{EVAL}.news.arguments:judge_add_arguments",
            ),
            "results": Command(
                f"{EVAL}.news.results",
                "results per model and attribute from judgements",
                arguments=f"{EVAL}.news.arguments:results_add_arguments",
            ),
            "demo": Command(
                f"{EVAL}.news.demo",
                "offline news demo: placeholder sample, tiny VLM answers and judge",
                arguments=f"{EVAL}.news.arguments:demo_add_arguments",
            ),
        },
    ),
    "explain": Command(
        f"{EVAL}.explain.pictures",
        "attention of an answer over the pair image, three panels",
        arguments=f"{EVAL}.explain.arguments:explain_add_arguments",
    ),
    "serve": Command(f"{EVAL}.serve.server", "serve a model behind an OpenAI-compatible chat API"),
    "upload": Group(
        "push a source, metric modules or results to the Hub; complete a source's dataset card",
        {
            name: Command(
                "vignette_bench.upload.command",
                help,
                attr=f"{name}_",
                arguments=f"vignette_bench.upload.arguments:{name}_add_arguments",
            )
            for name, help in (
                ("dataset", "a source folder (card, taxonomy, renders, index) to a Hub dataset repo"),
                ("metrics", "the metric modules, one gradio Space each (OWNER/<name>)"),
                ("results", "the leaderboard entries (validated) and the responses they cite to a Hub dataset repo"),
                ("card", "complete a source's README.md: pair counts, cautions, placeholders (local only)"),
            )
        },
    ),
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


def _run(entry: Command, words: list[str], args: list[str]) -> int:
    from vignette_bench.errors import VignetteError, known_failure, missing_extra

    prog = " ".join(words)
    if entry.arguments is None:
        try:
            module = importlib.import_module(entry.module)
        except ModuleNotFoundError as error:  # a job whose parser lives in its module: --help needs it too
            extra = missing_extra(error, f"`{prog}`")
            if extra is None or os.environ.get("VIGNETTE_DEBUG", "") not in ("", "0"):
                raise
            print(f"error: {extra}", file=sys.stderr)
            return 2
        job = getattr(module, f"{entry.attr}main")
        add_arguments = getattr(module, f"{entry.attr}add_arguments")
        description = (job.__doc__ if entry.attr else None) or module.__doc__
    else:  # the job's module is imported only once its arguments parse: --help stays light
        where, name = entry.arguments.split(":")
        add_arguments = getattr(importlib.import_module(where), name)
        description = _docstring(entry.module, f"{entry.attr}main" if entry.attr else None)
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
        if entry.arguments is not None:
            job = getattr(importlib.import_module(entry.module), f"{entry.attr}main")
        return int(job(parsed) or 0)
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
