"""No traceback for a known failure (issue 24, item 4): every command of `vignette` (walked from
vignette_bench.cli.COMMANDS, so a new command needs a case here) is run in-process on one bad input —
a missing input folder or file, or an output path below a regular file — and must end in one
`error: …` line (or argparse's usage), never an exception. Every error class the package defines
derives from VignetteError."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

import vignette_bench
from vignette_bench.cli import COMMANDS, Group, main
from vignette_bench.errors import VignetteError

M, OUT, BAD_OUT = "{missing}", "{out}", "{bad_out}"  # a missing path; a fresh output path; one below a file
CASES: dict[str, list[str]] = {
    "build render": ["--out", BAD_OUT],
    "build check": [M],
    "build shard": [M, "--out", OUT],
    "build verify": ["--source", M],
    "build sample": ["--out", BAD_OUT],
    "build photos": ["--rows", M, "--out", OUT],
    "build news": ["--images", M, "--rows", M, "--out", OUT],
    "build reduce": ["--source", M],
    "build specs": ["--source", M],
    "build protocol-sample": ["--source", M],
    "info": ["--source", M],
    "show": ["--config", "portraits", "--source", M, "--index", "0", "--out", OUT],
    "run": ["--source", M, "--config", "portraits", "--model", "random", "--out", OUT, "--no-progress"],
    "merge": [M],
    "import": ["--format", "vignette-csv", "--source", M, "--out", OUT],
    "report": [M, "--out", OUT],
    "compare": [M, M, "--out", OUT],
    "annotate export": ["--source", M, "--out", OUT],
    "annotate score": [M, M, "--items", M],
    "leaderboard create": [M, "--by", "someone"],
    "leaderboard validate": [M],
    "leaderboard verify": [M, "--model", "random"],
    "leaderboard build": ["--entries", M, "--out", BAD_OUT],
    "leaderboard export": [M, "--repo", "org/model", "--out", OUT],
    "leaderboard keygen": ["--out", BAD_OUT],
    "leaderboard init": ["--out", BAD_OUT],
    "leaderboard check-pr": ["--base", "main", "--head", "pr"],  # run outside any git repository
    "news answer": ["--source", M, "--model", "random", "--out", OUT],
    "news judge": ["--source", M, "--answers", M, "--judge", "random", "--out", OUT],
    "news results": ["--answers", M, "--judgements", M, "--out", OUT],
    "news demo": ["--out", BAD_OUT, "--limit", "1"],
    "explain": [M, "--question", "q0"],
    "serve": ["--model", "no-such-backend:x"],
    "upload dataset": ["--repo", "org/data", "--source", M, "--dry-run"],
    "upload metrics": ["--repo", "org", "--metrics", M, "--stage", OUT, "--wheel", M, "--dry-run"],
    "upload results": ["--repo", "org/results", "--entries", M, "--dry-run"],
    "upload card": ["--source", M],
    "demo": ["--out", BAD_OUT],
}


def _leaves(table, words=()):
    for name, entry in table.items():
        if isinstance(entry, Group):
            yield from _leaves(entry.commands, (*words, name))
        else:
            yield " ".join((*words, name))


def test_every_command_has_a_case() -> None:
    assert sorted(_leaves(COMMANDS)) == sorted(CASES)


@pytest.mark.parametrize("command", sorted(CASES))
def test_a_bad_input_ends_in_one_line(command: str, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)  # a default output folder lands here, not in the checkout
    monkeypatch.delenv("VIGNETTE_DEBUG", raising=False)
    (tmp_path / "a-file").write_text("not a folder")
    paths = {M: str(tmp_path / "missing"), OUT: str(tmp_path / "out"), BAD_OUT: str(tmp_path / "a-file" / "out")}
    argv = [*command.split(), *(paths.get(word, word) for word in CASES[command])]
    try:
        code = main(argv)
    except SystemExit as done:  # a message without a traceback (build news, build shard), never a bare exit 0
        assert isinstance(done.code, str) and done.code, done
        return
    said = capsys.readouterr()
    assert code != 0 and "Traceback" not in said.err
    assert (said.err + said.out).strip(), f"{argv}: exit {code} with nothing said"  # verify lists problems on stdout


def test_every_error_class_derives_from_vignette_error() -> None:
    loose = []
    for info in pkgutil.walk_packages(vignette_bench.__path__, "vignette_bench."):
        if info.name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional backend's package (vllm) is not installed
            continue
        for name, obj in inspect.getmembers(module, inspect.isclass):
            if obj.__module__ == info.name and issubclass(obj, BaseException) and not issubclass(obj, VignetteError):
                loose.append(f"{info.name}.{name}")
    assert sorted(loose) == []


@pytest.mark.parametrize("stage", ["import", "run"])
def test_a_missing_optional_package_names_its_extra(stage: str, monkeypatch, capsys) -> None:
    """A job whose module (or whose work) imports a package of a missing extra ends in `error:` naming the
    `pip install "vignette-bench[...]"` that installs it; the core-install test (tests/packaging) runs it for real."""
    import sys
    import types

    from vignette_bench import cli

    module = types.ModuleType("vignette_fake_job")

    def add_arguments(parser) -> None:
        pass

    def job(args) -> int:
        raise ModuleNotFoundError("No module named 'matplotlib'", name="matplotlib")

    module.add_arguments, module.main = add_arguments, job  # type: ignore[attr-defined]
    if stage == "import":
        monkeypatch.setattr(
            cli.importlib,
            "import_module",
            lambda name: (_ for _ in ()).throw(ModuleNotFoundError("No module named 'torch'", name="torch")),
        )
    else:
        monkeypatch.setitem(sys.modules, "vignette_fake_job", module)
    monkeypatch.setitem(cli.COMMANDS, "fake", cli.Command("vignette_fake_job", "a job needing an extra"))
    monkeypatch.delenv("VIGNETTE_DEBUG", raising=False)
    assert main(["fake"]) == 2
    err = capsys.readouterr().err
    extra = "hf" if stage == "import" else "report"
    assert err.startswith("error: `vignette fake` needs the") and f'pip install "vignette-bench[{extra}]"' in err


def test_a_missing_module_outside_the_extras_stays_a_bug(monkeypatch) -> None:
    import sys
    import types

    from vignette_bench import cli

    module = types.ModuleType("vignette_fake_job")
    module.add_arguments = lambda parser: None  # type: ignore[attr-defined]

    def job(args) -> int:
        raise ModuleNotFoundError("No module named 'vignette_bench.nowhere'", name="vignette_bench.nowhere")

    module.main = job  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vignette_fake_job", module)
    monkeypatch.setitem(cli.COMMANDS, "fake", cli.Command("vignette_fake_job", "a broken job"))
    with pytest.raises(ModuleNotFoundError):
        main(["fake"])
