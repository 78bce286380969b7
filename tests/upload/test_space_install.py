"""A staged metric Space installs (issue 26, item 4): its requirements.txt names the project's wheel, which the
Space carries, so `pip install -r requirements.txt` and `evaluate.load` work in a fresh venv. The Hub is not
reachable here: the test installs from the staged copy of the wheel (the file the Space URL serves)."""

from __future__ import annotations

import os
import subprocess
import venv
from pathlib import Path

import pytest

from tests import REPO_ROOT
from vignette_bench.upload.plan import UploadFolder
from vignette_bench.upload.targets import WHEELS, build_project_wheel, metrics_plan, pin_project, space_file_url

METRICS = REPO_ROOT / "vignette_bench" / "metrics"


def test_the_project_line_is_pinned_to_the_wheel_and_the_rest_kept() -> None:
    url = space_file_url("me/pair_comp", "wheels/vignette_bench-0.1.0-py3-none-any.whl")
    assert pin_project(["vignette-bench", "evaluate>=0.4.6", "vignette_bench>=0.1"], url) == [
        f"vignette-bench @ {url}",
        "evaluate>=0.4.6",
        f"vignette-bench @ {url}",
    ]


@pytest.mark.slow
def test_a_staged_space_installs_and_loads_in_a_fresh_venv(tmp_path: Path) -> None:
    wheel = build_project_wheel(tmp_path / "wheel")
    steps = metrics_plan(METRICS, "me", tmp_path / "stage", wheel=wheel)
    (space,) = (s for s in steps if isinstance(s, UploadFolder) and s.repo_id == "me/pair_comp")
    assert f"{WHEELS}/{wheel.name}" in space.paths
    requirements = (space.folder / "requirements.txt").read_text().splitlines()
    url = space_file_url("me/pair_comp", f"{WHEELS}/{wheel.name}")
    assert f"vignette-bench @ {url}" in requirements and "vignette-bench" not in requirements

    # what the Space's build would download from `url`: the staged copy of the wheel
    local = [r.replace(url, (space.folder / WHEELS / wheel.name).as_uri()) for r in requirements]
    (tmp_path / "requirements-local.txt").write_text("\n".join(local) + "\n")
    venv.create(tmp_path / "venv", with_pip=True)
    python = tmp_path / "venv" / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env |= {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1"}
    env |= {"PIP_DISABLE_PIP_VERSION_CHECK": "1", "HF_HOME": str(tmp_path / "hf")}
    installed = subprocess.run(
        [python, "-m", "pip", "install", "-q", "--prefer-binary", "-r", tmp_path / "requirements-local.txt"],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    script = (
        "import evaluate, sys\n"
        f"m = evaluate.load({str(space.folder)!r})\n"
        "out = m.compute(selected=['a', 'b', 'a', 'c'], candidates=[['a', 'b'], ['a', 'b'], ['a', 'c'], ['c', 'a']],"
        " context=['x', 'x', 'y', 'y'])\n"
        "print(sorted(out), len(out['pairs']))\n"
    )
    loaded = subprocess.run([python, "-c", script], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    assert "pairs" in loaded.stdout
    # and the venv got the project from the wheel, not from this checkout
    where = subprocess.run(
        [python, "-c", "import vignette_bench; print(vignette_bench.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert "site-packages" in where.stdout and str(REPO_ROOT) not in where.stdout


def test_a_missing_checkout_or_bad_wheel_is_refused(tmp_path: Path) -> None:
    from vignette_bench.upload.targets import UploadError

    bad = tmp_path / "other.whl"
    bad.write_text("")
    with pytest.raises(UploadError, match="not a vignette_bench-"):
        metrics_plan(METRICS, "me", tmp_path / "stage", wheel=bad)
