"""The core install alone (`pip install vignette-bench`, no extra) in a fresh venv: every command's --help works,
a command whose extra is missing says which `pip install "vignette-bench[...]"` to run (exit 2, `error:`), and
the `openai` extra pulls no torch. pip fetches the core's dependencies from its cache (or the index)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests import REPO_ROOT
from vignette_bench.cli import COMMANDS, Group

pytestmark = pytest.mark.slow

HEAVY = {"torch", "transformers", "accelerate", "outlines", "diffusers", "matplotlib", "vllm", "inspect-ai"}


def _run(*argv: str | Path, cwd: Path | None = None, timeout: int = 900) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "VIGNETTE_DEBUG")}
    env |= {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)


@pytest.fixture(scope="module")
def core(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv (no system site-packages) holding the project's wheel and its core dependencies only."""
    root = tmp_path_factory.mktemp("core")
    # --no-build-isolation: build with this venv's setuptools, offline
    built = _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", root, REPO_ROOT)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = root.glob("vignette_bench-*.whl")
    venv.create(root / "venv", with_pip=True)
    python = root / "venv" / "bin" / "python"
    installed = _run(python, "-m", "pip", "install", "-q", "--prefer-binary", wheel)
    assert installed.returncode == 0, installed.stderr[-3000:]
    return python


def _commands() -> list[list[str]]:
    out: list[list[str]] = []
    for name, entry in COMMANDS.items():
        out += [[name, sub] for sub in entry.commands] if isinstance(entry, Group) else [[name]]
    return out


def test_the_core_holds_no_optional_package(core: Path) -> None:
    listed = _run(core, "-m", "pip", "list", "--format", "json")
    names = {p["name"].lower() for p in json.loads(listed.stdout)}
    assert not names & HEAVY, names & HEAVY


def test_every_command_help_works_in_a_core_install(core: Path, tmp_path: Path) -> None:
    vignette = core.parent / "vignette"
    failed = {}
    for words in [[], *_commands()]:
        done = _run(vignette, *words, "--help", cwd=tmp_path)
        if done.returncode != 0:
            failed[" ".join(words)] = done.stderr[-500:]
    assert not failed, failed


def test_a_missing_extra_is_named_not_a_traceback(core: Path, tmp_path: Path) -> None:
    vignette = core.parent / "vignette"
    source, run_dir = tmp_path / "src", tmp_path / "run"
    assert _run(vignette, "build", "sample", "--out", source, "--size", "64", cwd=tmp_path).returncode == 0
    # the core loads pairs and runs the reference responders without torch
    ran = _run(vignette, "run", "--source", source, "--config", "identity_contrast", "--model", "always-left",
               "--out", run_dir, "--sample", "2", "--no-progress", cwd=tmp_path)  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-2000:]
    # the default page draws its findings figures as SVG: no matplotlib needed
    findings = _run(vignette, "report", run_dir, "--out", tmp_path / "findings", cwd=tmp_path)
    assert findings.returncode == 0, findings.stderr[-2000:]
    report = _run(vignette, "report", run_dir, "--out", tmp_path / "report", "--figures", "all", cwd=tmp_path)
    assert report.returncode == 2, report.stderr[-2000:]
    assert report.stderr.startswith("error:") and "Traceback" not in report.stderr
    assert 'pip install "vignette-bench[report]"' in report.stderr and "matplotlib" in report.stderr
    tiny = _run(vignette, "run", "--source", source, "--config", "identity_contrast", "--model", "tiny:llava",
                "--out", tmp_path / "run2", "--sample", "2", "--no-progress", cwd=tmp_path)  # fmt: skip
    assert tiny.returncode == 2 and "Traceback" not in tiny.stderr, tiny.stderr[-2000:]
    assert 'pip install "vignette-bench[hf]"' in tiny.stderr


def test_the_openai_extra_pulls_no_torch(core: Path) -> None:
    """What `pip install "vignette-bench[openai]"` would add to the core install (pip's resolver, nothing installed)."""
    (wheel,) = core.parents[2].glob("vignette_bench-*.whl")  # the wheel the fixture installed, with the extra
    plan = _run(core, "-m", "pip", "install", "--dry-run", "--quiet", "--prefer-binary",
                "--report", "-", f"{wheel}[openai]")  # fmt: skip
    assert plan.returncode == 0, plan.stderr[-3000:]
    names = {item["metadata"]["name"].lower() for item in json.loads(plan.stdout)["install"]}
    assert "openai" in names
    assert not names & HEAVY and not any(n.startswith("nvidia-") for n in names), names
