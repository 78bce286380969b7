"""The distribution: a wheel holds only `vignette` and `vignette_bench`, with the data the code reads,
and the installed copy works from any directory (no repository on sys.path)."""

from __future__ import annotations

import os
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests import REPO_ROOT

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # --no-build-isolation: build with the venv's setuptools, offline
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "-w",
            str(out),
            str(REPO_ROOT),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    (path,) = out.glob("vignette_bench-*.whl")
    return path


def test_wheel_has_only_project_top_level_names(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names}
    top.discard(next(t for t in top if t.endswith(".dist-info")))
    assert top == {"vignette.py", "vignette_bench"}, top
    for generic in ("eval", "metrics", "upload", "dataset_builder", "cards", "tests"):
        assert not any(n.startswith(f"{generic}/") for n in names)


def test_wheel_carries_the_data_the_code_reads(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for csv in ("identities", "activities", "sscm_terms", "roles", "role_question_templates", "near_synonyms"):
        assert f"vignette_bench/taxonomy/{csv}.csv" in names
    for metric in ("selection_frequency", "log_odds", "pair_comp", "polarity"):
        assert f"vignette_bench/metrics/{metric}/{metric}.py" in names
        assert f"vignette_bench/metrics/{metric}/README.md" in names
    assert "vignette_bench/cards/dataset_card_template.md" in names
    assert "vignette_bench/eval/leaderboard/entry.schema.json" in names
    for task_file in ("vignette_identity_contrast.yaml", "_vignette_template_yaml", "placeholder.jsonl"):
        assert f"vignette_bench/lmms_eval_tasks/{task_file}" in names  # lmms-eval --include_path
    # every folder of Python code is a package in the wheel (a folder without __init__.py is dropped)
    code_dirs = {
        p.parent.relative_to(REPO_ROOT).as_posix()
        for p in (REPO_ROOT / "vignette_bench").rglob("*.py")
        if "metrics" not in p.parts and "__pycache__" not in p.parts
    }
    assert {d for d in code_dirs if f"{d}/__init__.py" not in names} == set()
    entry_points = next(n for n in names if n.endswith("dist-info/entry_points.txt"))
    assert "vignette = vignette_bench.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_installed_wheel_works_from_any_directory(wheel: Path, tmp_path: Path) -> None:
    """Unpack the wheel as pip would into a fresh site folder; dependencies come from this venv's
    site-packages through a .pth line (a plain path line does not run the editable install's hook,
    so the repository is not importable)."""
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)
    deps = tmp_path / "deps"
    deps.mkdir()
    (deps / "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(target)
    code = (
        "import sys, vignette, vignette_bench, vignette_bench.taxonomy as t\n"
        "from vignette import load_dataset\n"
        f"assert {str(REPO_ROOT)!r} not in vignette.__file__, vignette.__file__\n"
        "tax = t.load_taxonomy()\n"
        "print(len(tax.identities), len(tax.activities))\n"
    )

    def python(code: str) -> subprocess.CompletedProcess[str]:
        # -S: no site-packages but the ones added here, so only the wheel and the dependencies are importable
        prelude = f"import site\nsite.addsitedir({str(deps)!r})\n"
        return subprocess.run(
            [sys.executable, "-S", "-c", prelude + code],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    run = python(code)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["167", "75"]
    cli = python("from vignette_bench.cli import main\nraise SystemExit(main(['--help']))")
    assert cli.returncode == 0, cli.stderr
    for job in (
        "build",
        "info",
        "show",
        "run",
        "merge",
        "report",
        "leaderboard",
        "news",
        "explain",
        "serve",
        "upload",
        "demo",
    ):
        assert f"\n  {job} " in cli.stdout
