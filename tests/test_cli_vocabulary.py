"""Every `vignette` command: one dispatch style, one vocabulary of options, a clean usage line.

The walk covers the whole registry (`vignette_bench.cli.COMMANDS`), in-process: each command's
``--help`` runs through `cli.main` while every parser that parses is recorded, so the flags checked are
the ones a user can type. A flag must be shared (`cli_options.SHARED`) or declared for its command
below; a spelling in `cli_options.REFUSED` is refused everywhere. Adding a command or an option means
adding it here, which is the moment to ask whether the vocabulary already has a word for it.
`test_no_idea_has_two_spellings` checks the whole registry at once against `cli_options.VOCABULARY`: one
spelling per idea, one idea per spelling, KEY=VALUE settings repeated.
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from vignette_bench import cli, cli_options
from vignette_bench.errors import VignetteError

# The loader's `info` and `show` still parse their own argv (vignette.py is being split into
# vignette_bench/loader/; they get add_arguments/main there). Nothing else may.

# Each command's own flags (beyond cli_options.SHARED).
OWN_FLAGS: dict[str, set[str]] = {
    "build render": {
        "--revision",
        "--steps",
        "--guidance",
        "--dtype",
        "--device",
        "--batch-size",
        "--max-sequence-length",
        "--shard",
        "--genders",
        "--dimensions",
        "--identities",
        "--activities",
        "--no-portraits",
        "--renders-per-cell",
        "--taxonomy",
    },
    "build check": {
        "--min-std",
        "--max-hash-distance",
        "--no-face",
        "--workers",
        "--retry-invalid",
        "--device",
    },
    "build shard": {
        "--image-format",
        "--quality",
        "--max-shard-mb",
        "--taxonomy",
        "--check",
        "--reindex",
        "--card",
        "--license",
    },
    "build verify": {"--decode"},
    "build sample": {"--image-format", "--quality", "--identities", "--activities", "--renders-per-cell"},
    "build photos": {"--rows", "--taxonomy", "--quality"},
    "build news": {"--images", "--rows", "--skip-bad", "--rows-per-shard", "--placeholder"},
    "build reduce": {"--quality"},
    "build specs": {"--configs", "--rows-per-shard"},
    "build protocol-sample": {"--configs", "--rows-per-shard"},
    "info": {"--json"},
    "show": {"--config", "--index", "--seam"},
    "run": {
        "--config",
        "--sample",
        "--detectable-effect",
        "--icc",
        "--orders",
        "--filter",
        "--paradigms",
        "--variants",
        "--batch-size",
        "--shard",
        "--prefetch",
        "--retry-invalid",
        "--max-invalid",
        "--max-invalid-after",
        "--no-progress",
    },
    "merge": {"--allow-gaps", "--dry-run"},
    "import": {"--format", "--encoding", "--max-mb"},
    "report": {"--news", "--min-effect", "--label", "--figures"},
    "compare": {"--label", "--clusters"},
    "annotate export": {"--kind", "--config"},
    "annotate score": {"--items"},
    "leaderboard create": {"--by", "--location"},
    "leaderboard validate": {"--read-other-sources"},
    "leaderboard verify": {"--batch-size", "--key", "--read-other-sources"},
    "leaderboard keygen": set(),
    "leaderboard init": set(),
    "leaderboard check-pr": {"--base", "--head", "--board", "--read-other-sources"},
    "leaderboard build": {"--entries", "--strict", "--keys", "--read-other-sources"},
    "leaderboard export": {"--link"},
    "news answer": {"--robustness", "--batch-size", "--retry-invalid"},
    "news judge": {"--answers", "--judge", "--batch-size", "--judge-max-new-tokens", "--retry-invalid"},
    "news results": {"--answers", "--judgements", "--judge-id", "--compare"},
    "news demo": {"--judge", "--judge-max-new-tokens"},
    "explain": {"--question", "--layer", "--image"},
    "serve": {"--host", "--port", "--served-model-name"},
    "upload dataset": {"--private", "--dry-run"},
    "upload metrics": {"--metrics", "--stage", "--wheel", "--private", "--dry-run"},
    "upload results": {"--entries", "--stage", "--private", "--dry-run"},
    "upload card": set(),
    "demo": {"--tiny-pairs", "--random-pairs"},
}

# Commands that read a source take it as --source (never --out, never a positional).
READS_SOURCE = {
    "import",
    "build verify",
    "build reduce",
    "build specs",
    "build protocol-sample",
    "info",
    "show",
    "run",
    "annotate export",
    "news answer",
    "news judge",
    "upload dataset",
    "upload card",
}


def commands(table=cli.COMMANDS, words: tuple[str, ...] = ()) -> Iterator[tuple[str, cli.Command]]:
    for name, entry in table.items():
        if isinstance(entry, cli.Group):
            yield from commands(entry.commands, (*words, name))
        else:
            yield " ".join((*words, name)), entry


def groups(table=cli.COMMANDS, words: tuple[str, ...] = ()) -> Iterator[str]:
    for name, entry in table.items():
        if isinstance(entry, cli.Group):
            yield " ".join((*words, name))
            yield from groups(entry.commands, (*words, name))


ALL = dict(commands())


def help_of(name: str, monkeypatch, capsys) -> tuple[int, str, list[argparse.ArgumentParser]]:
    """`vignette NAME --help` in-process: exit code, stdout, and every parser that parsed."""
    parsers: list[argparse.ArgumentParser] = []
    parse = argparse.ArgumentParser.parse_known_args

    def recording(self, *args, **kwargs):
        parsers.append(self)
        return parse(self, *args, **kwargs)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", recording)
    monkeypatch.setattr(sys, "argv", list(sys.argv))  # the own-argv path sets argv[0]
    try:
        code = cli.main([*name.split(), "--help"])
    except SystemExit as done:  # a module that parses its own argv exits from argparse
        code = done.code
    return code, capsys.readouterr().out, parsers


def long_flags(parsers: list[argparse.ArgumentParser]) -> set[str]:
    return {o for p in parsers for a in p._actions for o in a.option_strings if o.startswith("--") and o != "--help"}


def test_the_vocabulary_is_one_word_per_idea():
    assert not set(cli_options.VOCABULARY) & set(cli_options.REFUSED)
    assert set(cli_options.SHARED) <= set(cli_options.VOCABULARY)
    assert set(cli_options.REFUSED.values()) - set(cli_options.VOCABULARY) == {"RUN (positional)"}
    assert set(OWN_FLAGS) == set(ALL), "declare the new command's own flags in OWN_FLAGS (or drop a gone one)"
    for name, own in OWN_FLAGS.items():
        assert not own & set(cli_options.SHARED), f"{name}: a shared flag is not an own flag"
        assert not own & set(cli_options.REFUSED), f"{name}: {own & set(cli_options.REFUSED)} is refused"


@pytest.mark.parametrize("name", sorted(ALL))
def test_every_command_has_add_arguments_and_main(name):
    import importlib

    entry = ALL[name]
    module = importlib.import_module(entry.module)
    assert callable(getattr(module, f"{entry.attr}add_arguments", None)), f"{name}: no {entry.attr}add_arguments"
    assert callable(getattr(module, f"{entry.attr}main", None)), f"{name}: no {entry.attr}main"


@pytest.mark.parametrize("name", sorted(ALL))
def test_help_usage_and_flags(name, monkeypatch, capsys):
    code, out, parsers = help_of(name, monkeypatch, capsys)
    assert code == 0, out
    words = f"vignette {name}"
    usage = [line for line in out.splitlines() if line.startswith("usage:")]
    assert len(usage) == 1 and out.count(f"usage: {words}") == 1, out
    tokens = usage[0].split()
    assert tokens[: len(name.split()) + 2] == ["usage:", *words.split()], usage[0]
    following = tokens[len(name.split()) + 2 :]
    assert not following or following[0] not in words.split(), f"usage repeats a command word: {usage[0]}"

    flags = long_flags(parsers)
    refused = {f: cli_options.REFUSED[f] for f in flags & set(cli_options.REFUSED)}
    assert not refused, f"{name}: refused spellings (old -> new): {refused}"
    unknown = flags - set(cli_options.SHARED) - OWN_FLAGS[name]
    assert not unknown, f"{name}: {sorted(unknown)} neither shared (cli_options.SHARED) nor declared in OWN_FLAGS"
    assert OWN_FLAGS[name] <= flags, f"{name}: declared but gone: {sorted(OWN_FLAGS[name] - flags)}"
    if name in READS_SOURCE:
        assert "--source" in flags, f"{name} reads a source: it takes --source"


@pytest.mark.parametrize("name", sorted(groups()))
def test_group_help(name, capsys):
    assert cli.main([*name.split(), "--help"]) == 0
    out = capsys.readouterr().out
    assert out.count(f"usage: vignette {name} COMMAND") == 1


def test_usage_errors_return_2_without_a_traceback(capsys):
    assert cli.main(["run", "--size", "big"]) == 2
    err = capsys.readouterr().err
    assert "usage: vignette run" in err and "--size" in err and "Traceback" not in err
    assert cli.main(["leaderboard", "nope"]) == 2
    assert "unknown command 'nope'" in capsys.readouterr().err


@pytest.fixture
def failing_command(monkeypatch):
    module = types.ModuleType("vignette_test_failing")
    module.add_arguments = lambda p: p.add_argument("--what", default="index")  # type: ignore[attr-defined]

    def main(args):
        raise VignetteError(f"the {args.what} names a missing file: run `vignette build shard --reindex`")

    module.main = main  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(cli.COMMANDS, "failing", cli.Command(module.__name__, "always fails"))


def test_a_vignette_error_is_one_line_and_exit_2(failing_command, monkeypatch, capsys):
    monkeypatch.delenv("VIGNETTE_DEBUG", raising=False)
    assert cli.main(["failing"]) == 2
    captured = capsys.readouterr()
    assert captured.err == "error: the index names a missing file: run `vignette build shard --reindex`\n"
    assert captured.out == ""


def test_vignette_debug_shows_the_traceback(failing_command, monkeypatch):
    monkeypatch.setenv("VIGNETTE_DEBUG", "1")
    with pytest.raises(VignetteError, match="missing file"):
        cli.main(["failing", "--what", "index"])


def test_other_exceptions_keep_their_traceback(monkeypatch):
    module = types.ModuleType("vignette_test_buggy")
    module.add_arguments = lambda p: None  # type: ignore[attr-defined]
    module.main = lambda args: 1 / 0  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(cli.COMMANDS, "buggy", cli.Command(module.__name__, "a bug"))
    with pytest.raises(ZeroDivisionError):
        cli.main(["buggy"])


@pytest.mark.parametrize("name", sorted(ALL))
def test_every_option_and_positional_has_help(name, monkeypatch, capsys):
    code, _, parsers = help_of(name, monkeypatch, capsys)
    assert code == 0
    actions = [a for p in parsers for a in p._actions]
    bare = [(a.option_strings or [a.metavar or a.dest])[0] for a in actions if not (a.help or "").strip()]
    assert not bare, f"vignette {name}: {bare} have no help text (add help=...)"


def examples(text: str) -> list[str]:
    """The `vignette ...` command lines a help text shows: backticked spans and lines starting with `vignette `.

    A synopsis is read as its first instance: ``[--x Y]`` keeps ``--x Y``, ``[...]``/``...`` go, ``a|b`` and
    ``{a,b}`` take ``a``, and prose after ``": "`` is cut."""
    spans = re.findall(r"`+(vignette [^`]+)`+", text)
    spans += [line.strip() for line in text.splitlines() if line.strip().startswith("vignette ")]
    out = []
    for span in spans:
        line = span.split(": ", 1)[0].rstrip(":")
        line = re.sub(r"\[\.\.\.\]|\.\.\.", " ", line).replace("[", " ").replace("]", " ")
        line = re.sub(r"\{([^,}]+)[^}]*\}", r"\1", line)
        out.append(" ".join(token.split("|")[0] for token in shlex.split(line)))
    return out


def split_command(line: str) -> tuple[str, list[str]]:
    words = line.split()[1:]
    for n in (2, 1):
        if " ".join(words[:n]) in ALL:
            return " ".join(words[:n]), words[n:]
    raise AssertionError(f"{line!r} names no vignette command")


def parser_of(name: str, monkeypatch, capsys) -> argparse.ArgumentParser:
    """The parser `vignette NAME` builds (the one that parsed `--help`, with the options of every command)."""
    with monkeypatch.context() as patched:
        code, _, parsers = help_of(name, patched, capsys)
    assert code == 0 and parsers
    return parsers[-1]


@pytest.mark.parametrize("name", sorted(ALL))
def test_every_example_in_a_help_text_parses(name, monkeypatch, capsys):
    code, out, _ = help_of(name, monkeypatch, capsys)
    assert code == 0
    for line in examples(out):
        command, args = split_command(line)
        if not args:  # a mention of a command (`vignette annotate score` writes ...), not an example
            continue
        parser = parser_of(command, monkeypatch, capsys)
        try:
            parser.parse_args(args)
        except SystemExit:
            raise AssertionError(
                f"`vignette {name} --help` shows {line!r}, which does not parse:\n" + capsys.readouterr().err
            ) from None


def test_the_examples_are_read_as_their_first_instance():
    text = "see `vignette run --source S` and\n  vignette upload {dataset,metrics} --repo ID [--dry-run] [...]: prose\n"
    assert examples(text) == ["vignette run --source S", "vignette upload dataset --repo ID --dry-run"]


def test_every_renamed_spelling_names_a_command_that_takes_the_new_one(monkeypatch, capsys):
    for name, renamed in cli_options.RENAMED.items():
        assert name in ALL, f"RENAMED names {name!r}, no command"
        taken = long_flags([parser_of(name, monkeypatch, capsys)])
        for old, new in renamed.items():
            assert old not in taken and new in taken, f"vignette {name}: {old} -> {new}"


@pytest.mark.parametrize("name", sorted(ALL))
def test_an_old_spelling_gets_a_hint_naming_the_new_one(name, monkeypatch, capsys):
    parser = parser_of(name, monkeypatch, capsys)
    taken = set(parser._option_string_actions)
    taken |= {f"{a.metavar} (positional)" for a in parser._actions if not a.option_strings}
    table = {**cli_options.REFUSED, **cli_options.RENAMED.get(name, {})}
    hinted = {old: new for old, new in table.items() if old not in taken and new in taken}
    assert hinted or not {*table.values()} & taken, f"vignette {name}: no old spelling to try"
    for old, new in hinted.items():
        for typed in [["a/folder"]] if old.endswith(" (positional)") else [[old, "1"], [f"{old}=1"]]:
            assert cli.main([*name.split(), *typed]) == 2
            err = capsys.readouterr().err
            assert err.endswith(f"vignette {name}: error: {old} is now {new}\n"), err
            assert "unrecognized arguments" not in err


def test_the_old_image_size_flag_of_run(capsys):
    assert cli.main(["run", "--source", "s", "--image-size", "672x336"]) == 2
    assert capsys.readouterr().err.endswith("vignette run: error: --image-size is now --size\n")
    assert cli.main(["build", "shard", "--out", "o", "--check", "t", "--size"]) == 2  # shard's own --check
    assert "is now" not in capsys.readouterr().err


def test_show_names_the_config_flag_for_the_old_positional(monkeypatch, capsys):
    monkeypatch.delenv("VIGNETTE_DEBUG", raising=False)
    assert cli.main(["show", "portraits", "--index", "0", "--out", "x.png"]) == 2
    assert (
        capsys.readouterr().err
        == "error: CONFIG (positional) is now --config: `vignette show --config portraits ...`\n"
    )
    assert cli.main(["show", "--index", "0", "--out", "x.png"]) == 2
    assert "--config CONFIG" in capsys.readouterr().err


def spelling_problems(parsers: dict[str, argparse.ArgumentParser]) -> list[str]:
    """Where the commands' parsers spell one idea two ways or give one spelling two meanings (empty: none).

    One idea, one spelling: a flag that several commands take is declared in `cli_options.VOCABULARY` and means
    the same there (the same action; the same choices where they are listed); no command takes another spelling
    of an idea (`cli_options.REFUSED`) or its own old one (`cli_options.RENAMED`). Lists follow one rule: a
    KEY=VALUE setting is one value per use of a repeated flag; several values after one flag are files."""
    problems = []
    takers: dict[str, list[tuple[str, argparse.Action]]] = {}
    for name, parser in parsers.items():
        taken = set(parser._option_string_actions)
        taken |= {f"{a.metavar} (positional)" for a in parser._actions if not a.option_strings}
        for old in sorted(taken & {*cli_options.REFUSED, *cli_options.RENAMED.get(name, {})}):
            new = cli_options.REFUSED.get(old) or cli_options.RENAMED[name][old]
            problems.append(f"vignette {name} takes {old}, another spelling of {new}")
        for action in parser._actions:
            for flag in action.option_strings:
                if flag.startswith("--") and flag != "--help":
                    takers.setdefault(flag, []).append((name, action))
            values = [action.metavar or "", *(action.default if isinstance(action.default, list) else [])]
            if any("=" in str(v) for v in values):
                if not isinstance(action, argparse._AppendAction) or action.nargs is not None:
                    problems.append(
                        f"vignette {name} {action.option_strings or action.metavar}: KEY=VALUE settings repeat "
                        f"the flag, one per use (as --filter), not {action.nargs or 'one'} value(s) after it"
                    )
    for flag, where in sorted(takers.items()):
        names = [name for name, _ in where]
        if len(where) > 1 and flag not in cli_options.VOCABULARY:
            problems.append(f"{flag} is taken by {', '.join(names)}: declare it in cli_options.VOCABULARY")
        kinds = {type(a).__name__ for _, a in where}
        choices = {(name, tuple(a.choices)) for name, a in where if a.choices is not None}
        if len(kinds) > 1 or len({c for _, c in choices}) > 1:
            means = "; ".join(f"{name}: {type(a).__name__} {list(a.choices or [])}" for name, a in where)
            problems.append(f"{flag} means different things ({means}): give each idea its own word")
    return problems


def test_no_idea_has_two_spellings(monkeypatch, capsys):
    parsers = {name: parser_of(name, monkeypatch, capsys) for name in sorted(ALL)}
    problems = spelling_problems(parsers)
    assert not problems, "\n".join(problems)


def test_the_vocabulary_is_documented():
    text = (Path(__file__).parent.parent / "docs" / "cli.md").read_text(encoding="utf-8")
    missing = [flag for flag in cli_options.VOCABULARY if f"`{flag}" not in text]
    assert not missing, f"docs/cli.md does not name {missing} (cli_options.VOCABULARY)"
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in text.splitlines() if line.startswith("| `")]
    before: dict[str, str] = {}
    for row in rows:
        if len(row) == 3:  # | command | before | now |
            before[row[0].strip("`")] = before.get(row[0].strip("`"), "") + row[1]
    undocumented = [
        f"{name} {old}"
        for name, table in cli_options.RENAMED.items()
        for old in table
        if f"`{old.split(' (')[0]}" not in before.get(name, "")
    ]
    assert not undocumented, f"docs/cli.md's table of renamed spellings lacks {undocumented}"


def test_the_spelling_check_finds_two_spellings_and_two_meanings():
    """What the walk above refuses, on parsers built as main's were before issue 36 (item 4)."""

    def parser(*options: tuple[str, dict]) -> argparse.ArgumentParser:
        p = argparse.ArgumentParser()
        for flag, kw in options:
            p.add_argument(flag, **kw)
        return p

    codec = parser(("--format", {"choices": ("jpeg", "webp")}))
    kind = parser(("--format", {"choices": ("vignette-csv", "table")}))
    judge = parser(("--retry-failures", {"action": "store_true"}))
    run = parser(("--variants", {"nargs": "+", "default": ["paraphrase=0", "modality=image"]}))
    verify = argparse.ArgumentParser()
    verify.add_argument("source", metavar="SOURCE")
    problems = spelling_problems(
        {"build shard": codec, "import": kind, "news judge": judge, "run": run, "build verify": verify}
    )
    assert any(p.startswith("--format means different things") for p in problems), problems
    assert "vignette news judge takes --retry-failures, another spelling of --retry-invalid" in problems
    assert any(p.startswith("vignette run ['--variants']: KEY=VALUE settings repeat the flag") for p in problems)
    assert "vignette build verify takes SOURCE (positional), another spelling of --source" in problems
    assert "vignette build shard takes --format, another spelling of --image-format" in problems
    assert len(problems) == 5, problems
    shared = parser(("--stage", {}))
    assert spelling_problems({"a": shared, "b": parser(("--stage", {}))}) == []
    assert spelling_problems({"a": parser(("--staging", {})), "b": parser(("--staging", {}))}) == [
        "--staging is taken by a, b: declare it in cli_options.VOCABULARY"
    ]


def test_a_second_key_value_after_a_repeated_flag_says_to_repeat_it(capsys):
    """`run --variants` was space-separated KEY=VALUES; now it repeats like --filter, and the old form is named."""
    base = ["run", "--source", "s", "--config", "portraits", "--model", "random", "--out", "o"]
    for old in (["--variants", "paraphrase=0,1", "modality=image"], ["--variants=paraphrase=0,1", "modality=image"]):
        assert cli.main([*base, *old]) == 2
        assert capsys.readouterr().err.endswith(
            "vignette run: error: --variants takes one KEY=VALUES per use: repeat it "
            "(--variants paraphrase=0,1 --variants modality=image)\n"
        )
    assert cli.main([*base, "--filter", "gender=female", "dimensions=religion"]) == 2
    assert "repeat it (--filter gender=female --filter dimensions=religion)" in capsys.readouterr().err
    assert cli.main([*base, "--variants", "wording=1"]) == 2  # a wrong KEY is a usage error naming the keys
    assert "KEY one of paraphrase, option_style, modality" in capsys.readouterr().err


def test_the_repeated_variants_parse_to_the_wordings_asked(monkeypatch, capsys):
    from vignette_bench.formats.run_record import Variants

    run = parser_of("run", monkeypatch, capsys)
    base = ["--source", "s", "--config", "portraits", "--model", "random", "--out", "o"]
    args = run.parse_args([*base, "--variants", "paraphrase=0,1", "--variants", "modality=image,text"])
    assert Variants.parse(args.variants) == Variants(paraphrases=(0, 1), modalities=("image", "text"))
    assert Variants.parse(run.parse_args(base).variants) == Variants()  # the default: one wording
    assert Variants.parse(run.parse_args([*base, "--variants", "all"]).variants) == Variants.all()


def test_upload_is_a_group_of_commands(capsys):
    assert cli.main(["upload", "--help"]) == 0
    out = capsys.readouterr().out
    assert all(f"  {name}" in out for name in ("dataset", "metrics", "results", "card")), out
    assert cli.main(["upload", "results", "--source", "leaderboard/entries", "--repo", "o/r"]) == 2
    assert capsys.readouterr().err.endswith("vignette upload results: error: --source is now --entries\n")
    assert cli.main(["build", "verify", "my_source"]) == 2
    assert capsys.readouterr().err.endswith("vignette build verify: error: SOURCE (positional) is now --source\n")
