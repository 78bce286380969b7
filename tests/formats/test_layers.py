"""Imports point down: the formats import no stage, and the stages that read runs do not import each other."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "vignette_bench"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports() -> dict[str, set[str]]:
    """Every module's import targets, lazy ones inside functions included."""
    out: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        name, targets = module_name(path), set()
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                targets.add(base)
                targets |= {f"{base}.{a.name}" for a in node.names}
        out[name] = targets
    return out


def edges(source: str, target: str) -> list[str]:
    def inside(name: str, package: str) -> bool:
        return name == package or name.startswith(package + ".")

    return sorted(f"{m} -> {t}" for m, ts in imports().items() if inside(m, source) for t in ts if inside(t, target))


PREFIX = "vignette_bench."


def test_formats_import_no_stage():
    stages = ("vignette", "dataset_builder", "eval", "upload", "cards", "metrics", "stats", "cli")
    for stage in stages:
        target = stage if stage == "vignette" else PREFIX + stage
        assert edges(PREFIX + "formats", target) == []


def test_no_upward_or_sideways_edges_between_the_run_readers():
    for source, target in [
        ("eval.runtime", "eval.explain"),
        ("eval.report", "eval.compare"),
        ("eval.compare", "eval.report"),
        ("eval.leaderboard", "eval.report"),
        ("eval.analysis", "eval.report"),
        ("eval.analysis", "eval.compare"),
        ("eval.analysis", "eval.leaderboard"),
        ("eval.runs", "eval.report"),
    ]:
        assert edges(PREFIX + source, PREFIX + target) == [], (source, target)
