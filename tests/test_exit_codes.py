"""Every handled error exits 2 (docs/cli.md, "Errors"): a handler that prints ``error: ...`` and returns
must return 2. Only the commands that judge files return 1, for a file they reject: `leaderboard validate`,
`build`, `verify` and `check-pr` (their REJECT lines and check-pr's one ``error: <file>: <reason>`` line per
problem), and `merge` for a run with gaps; none of those returns 1 right after an ``error:`` line here."""

from __future__ import annotations

import ast
from pathlib import Path

import vignette_bench
from vignette_bench.cli import main

PACKAGE = Path(vignette_bench.__file__).parent


def _prints_error(node: ast.stmt) -> bool:
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        return False
    call = node.value
    if not (isinstance(call.func, ast.Name) and call.func.id == "print" and call.args):
        return False
    first = call.args[0]
    text = first.value if isinstance(first, ast.Constant) else None
    if isinstance(first, ast.JoinedStr) and first.values and isinstance(first.values[0], ast.Constant):
        text = first.values[0].value
    return isinstance(text, str) and text.lstrip("\n").startswith("error:")


def test_a_handler_that_prints_error_returns_2():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            body = getattr(node, "body", None)
            if not isinstance(body, list):
                continue
            for printed, after in zip(body, body[1:]):
                if _prints_error(printed) and isinstance(after, ast.Return):
                    code = after.value.value if isinstance(after.value, ast.Constant) else None
                    if code != 2:
                        wrong.append(f"{path.relative_to(PACKAGE.parent)}:{after.lineno} returns {code!r}")
    assert not wrong, "an `error:` line must exit 2 (docs/cli.md):\n" + "\n".join(wrong)


def test_merge_of_a_folder_that_is_no_run_is_an_error_2(tmp_path, capsys):
    assert main(["merge", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
