"""One plan for a run's settings (`plan_for`, vignette_bench/eval/runtime/plan.py): every stage that rebuilds a
run's questions takes it from there, never from the runner (run.py)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from vignette_bench.dataset_builder.sample import build_sample
from vignette_bench.eval.runtime.plan import plan_for
from vignette_bench.eval.runtime.questions import Variants
from vignette_bench.eval.runtime.run import run
from vignette_bench.formats.run_record import RunSettings

ROOT = Path(__file__).resolve().parents[3]
RUNNER = "vignette_bench.eval.runtime.run"
# Modules that run the runner (not to get a plan): what each may take from it.
RUNS = {"vignette_bench/eval/demo.py": {"run"}}


def runner_imports(tree: ast.AST) -> list[tuple[int, set[str]]]:
    """(line, names) for every import of the runner in a module (lazy ones inside functions too)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == RUNNER:
            out.append((node.lineno, {a.name for a in node.names}))
        elif isinstance(node, ast.ImportFrom) and node.module == "vignette_bench.eval.runtime":
            out += [(node.lineno, {"run (the module)"}) for a in node.names if a.name == "run"]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, {"the module"}) for a in node.names if a.name == RUNNER]
    return out


def test_no_package_module_imports_the_runner_for_a_plan() -> None:
    found = []
    for path in [ROOT / "vignette.py", *sorted((ROOT / "vignette_bench").rglob("*.py"))]:
        name = str(path.relative_to(ROOT))
        if name == "vignette_bench/eval/runtime/run.py":
            continue
        for line, names in runner_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if not names <= RUNS.get(name, set()):
                found.append(f"{name}:{line}: {sorted(names)}")
    assert not found, "import the plan from vignette_bench/eval/runtime/plan.py, not the runner:\n" + "\n".join(found)


def test_the_check_finds_a_runner_import() -> None:
    tree = ast.parse("def f():\n    from vignette_bench.eval.runtime.run import open_pairs\n")
    assert runner_imports(tree) == [(2, {"open_pairs"})]


def test_the_plan_module_loads_no_runner() -> None:
    code = f"import sys, vignette_bench.eval.runtime.plan; print({RUNNER!r} in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False"


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> str:
    identities = ("man", "woman", "muslim", "hindu", "old", "young")
    return str(build_sample(tmp_path_factory.mktemp("src"), size=48, identities=identities, activities=("cooking",)))


def test_the_plan_is_what_a_run_asks(source: str, tmp_path: Path) -> None:
    settings = RunSettings(
        source=source,
        config="portraits",
        model="random",
        seed=3,
        sample=4,
        image_size=(96, 48),
        variants=Variants((0,), ("identity", "position"), ("image", "text")),
        filters=(("dimensions", "religion,age"),),
    )
    plan = plan_for(settings)
    planned = [(row["pair_id"], q.question_id, q.template_id, q.options) for row, qs in plan.questions() for q in qs]
    result = run(settings, tmp_path / "run", progress=False)
    assert result.responses is not None
    asked = pd.read_parquet(result.responses)
    assert len(planned) == len(asked) == result.asked > 0
    got = {(r.pair_id, r.question_id, r.template_id, tuple(r.options)) for r in asked.itertuples()}
    assert set(planned) == got
    assert {row["dimension"] for row in plan.pairs.rows} <= {"religion", "age"}
