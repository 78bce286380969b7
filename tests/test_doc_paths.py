"""Paths written in the docs, messages and comments name real files, by their real path (docs/layout.md).

A path token is a run of path components with at least one `/` that ends in a file extension or a
`/` (`vignette_bench/eval/runtime/run.py`, `docs/`, `tests/<part>/`). It is a *repository path*
when its first component is a top-level entry of the repository (git's tracked files and the root
links); every other token is a path in a user's folder (`runs/llava/responses.parquet`,
`RUN_DIR/log/`, `renders/index.parquet`, `~/.cache/...`) and is not checked, with one exception: a
`.py` path always means our code, so `runtime/run.py` must be written in full (unless it starts at a
`<placeholder>`: `<name>/<name>.py` inside a folder the text names). A repository path
must exist (`<placeholder>` and `*` match any one component) and must not go through a root link
(`eval/runtime/run.py`; the links are signposts, docs/layout.md). A bare link name (`eval/`) is
allowed only on a line that says it is talking about the links. In a fenced block, the first token
of an indented line is an entry of the tree drawn above it, relative to it, and is not checked.
`../` links are resolved against the file's folder.

Read: README.md, BENCHMARKS.md, docs/*.md, benchmarks/*.md, and the string literals and comments
of vignette_bench/**/*.py and benchmarks/*.py (messages, docstrings, comments).
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import tokenize
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXT = "py|md|json|jsonl|csv|tsv|yaml|yml|toml|txt|ini|cfg|parquet|html|js|css|png|jpg|tar|sh"
COMPONENT = r"[\w.<>*-]+"
PATH = re.compile(rf"(?<![\w/.:~<>$@-])((?:{COMPONENT}/)+(?:{COMPONENT}\.(?:{EXT})|))(?![\w/])")
URL = re.compile(r"\w+://\S*")


@cache
def top_level() -> frozenset[str]:
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return frozenset(line.split("/")[0] for line in tracked.splitlines() if line)


@cache
def root_links() -> frozenset[str]:
    return frozenset(p.name for p in ROOT.iterdir() if p.is_symlink())


def _exists(path: str) -> bool:
    pattern = re.sub(r"<[^>/]*>", "*", path.rstrip("/"))
    if not any(ch in pattern for ch in "*?["):
        return (ROOT / pattern).exists()
    return any(True for _ in ROOT.glob(pattern))


def problem(token: str, line: str, relative_to: Path) -> str | None:
    """What is wrong with one path token, or None."""
    if token.startswith("../"):
        token = os.path.relpath(os.path.normpath(relative_to / token), ROOT)
    first = token.split("/")[0]
    if first in root_links():
        if token == first + "/" and "link" in line:
            return None
        return f"{token}: goes through the root link {first}/ (write vignette_bench/{token.rstrip('/')})"
    if first in top_level():
        return None if _exists(token) else f"{token}: no such file in the repository"
    if token.endswith(".py") and not re.fullmatch(r"<[^>]*>|\*", first):
        return f"{token}: a .py path names our code; write it from the repository root"
    return None


def _tokens(text: str, fenced_tree: bool) -> Iterator[str]:
    text = URL.sub(" ", text)
    for match in PATH.finditer(text):
        if fenced_tree and not text[: match.start()].strip():
            continue  # a tree entry, relative to the entry above it
        yield match.group(1)


def doc_problems(path: Path) -> list[str]:
    out, fenced = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        tree_line = fenced and line[:1].isspace()
        for token in _tokens(line, tree_line):
            if why := problem(token, line, path.parent):
                out.append(f"{path.relative_to(ROOT)}:{number}: {why}")
    return out


def code_problems(path: Path) -> list[str]:
    out = []
    source = path.read_text(encoding="utf-8")
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in (tokenize.STRING, tokenize.COMMENT):
            continue
        for offset, line in enumerate(tok.string.splitlines()):
            for token in _tokens(line, False):
                if why := problem(token, line, ROOT):
                    out.append(f"{path.relative_to(ROOT)}:{tok.start[0] + offset}: {why}")
    return out


def _param(path: Path) -> object:
    name = path.relative_to(ROOT).as_posix()
    return pytest.param(path, id=name)


DOCS = [ROOT / "README.md", ROOT / "BENCHMARKS.md", *sorted((ROOT / "docs").glob("*.md"))]
DOCS += sorted((ROOT / "benchmarks").glob("*.md"))
CODE = sorted((ROOT / "vignette_bench").rglob("*.py")) + sorted((ROOT / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("path", [_param(p) for p in DOCS])
def test_doc_paths_name_real_files(path: Path) -> None:
    assert doc_problems(path) == []


@pytest.mark.parametrize("path", [_param(p) for p in CODE])
def test_message_and_comment_paths_name_real_files(path: Path) -> None:
    assert code_problems(path) == []


def test_the_checker_catches_what_it_should() -> None:
    here = ROOT / "docs"
    assert problem("vignette_bench/eval/runtime/run.py", "", here) is None
    assert problem("tests/<part>/", "", here) is None
    assert problem("../vignette_bench/cards/leaderboard_card.md", "", here) is None
    assert "root link" in (problem("eval/runtime/run.py", "", here) or "")
    assert "root link" in (problem("eval/", "the parts", here) or "")
    assert problem("eval/", "links into vignette_bench", here) is None
    assert "no such file" in (problem("vignette_bench/eval/questions.py", "", here) or "")
    assert ".py path" in (problem("runtime/run.py", "", here) or "")
    assert problem("<name>/<name>.py", "", here) is None  # inside a folder named elsewhere
    assert problem("runs/llava/responses.parquet", "", here) is None  # a user's folder
    assert list(_tokens("see https://host/eval/x.py and hf://datasets/a/b.json", False)) == []
    assert list(_tokens("`dataset_builder/__main__.py`, and/or", False)) == ["dataset_builder/__main__.py"]
