"""`inspect eval` from its own command line, offline (docs/inspect.md): the package's `inspect_ai` entry point
registers the tasks `vignette_bench/...` and the model provider `vignette/SPEC`; the log imports with
`vignette import --format inspect` to the responses `vignette run` writes for the same model and sample, with
the dataset's provenance (source, index digest, placeholder renders). A failed or foreign log is one error.

The commands run in a subprocess without a network namespace where `unshare -rn` works (so nothing may
download, e.g. tiktoken's encoding), with a dist-info of this checkout first on PYTHONPATH that holds
pyproject.toml's entry points as `pip install -e .` writes them: the shared venv's installed metadata may
predate them, and importlib.metadata takes the first distribution of a name on sys.path.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import tomllib

pytest.importorskip("inspect_ai")

from vignette_bench.dataset_builder.sample import build_sample  # noqa: E402
from vignette_bench.eval.runs import placeholder_renders  # noqa: E402
from vignette_bench.formats.run_record import RunRecord  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
IDENTITIES = ("man", "woman", "muslim", "hindu")
ACTIVITIES = ("cooking", "teaching")
TASK_ARGS = ("-T", "sample=3", "-T", "seed=5", "-T", "size=96x48")


@cache
def _offline() -> tuple[str, ...]:
    """`unshare -rn` (a user and network namespace: no network at all) where the kernel allows it."""
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-rn", "true"], capture_output=True).returncode == 0:
        return (unshare, "-rn")
    return ()


def _dist_info(folder: Path) -> Path:
    """A dist-info of this checkout (METADATA, pyproject's entry points, an editable direct_url.json)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    info = folder / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    groups = {"console_scripts": project["scripts"], **project["entry-points"]}
    text = "".join(f"[{g}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n" for g, eps in groups.items())
    (info / "entry_points.txt").write_text(text)
    (info / "direct_url.json").write_text(json.dumps({"dir_info": {"editable": True}, "url": ROOT.as_uri()}))
    return folder


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    site = _dist_info(tmp_path_factory.mktemp("site"))
    path = os.pathsep.join(p for p in (str(site), str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    empty = tmp_path_factory.mktemp("tiktoken")  # an empty encoding cache: tiktoken would have to download
    return {**os.environ, "PYTHONPATH": path, "TIKTOKEN_CACHE_DIR": str(empty), "HF_HUB_OFFLINE": "1"}


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(build_sample(tmp_path_factory.mktemp("src"), size=48, identities=IDENTITIES, activities=ACTIVITIES))


def inspect(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`inspect ARGS` run in `cwd` (`python -m` puts the folder it runs in first on sys.path: not the checkout,
    whose stale vignette_bench.egg-info would shadow the dist-info above)."""
    command = [*_offline(), sys.executable, "-m", "inspect_ai", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, cwd=cwd)


def vignette(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "vignette_bench", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize(("task", "spec"), [("identity_contrast", "random"), ("portraits", "always-left")])
def test_inspect_eval_on_the_command_line_imports_as_vignette_run(
    env: dict[str, str], source: str, tmp_path: Path, task: str, spec: str
) -> None:
    logs = tmp_path / "logs"
    ran = inspect(env, "eval", f"vignette_bench/{task}", "--model", f"vignette/{spec}", "-T", f"source={source}",
                  *TASK_ARGS, "--log-dir", str(logs), "--display", "none", cwd=tmp_path)  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    imported = vignette(env, "import", "--format", "inspect", "--source", str(logs), "--out", str(tmp_path / "imp"))
    assert imported.returncode == 0, imported.stderr
    run = vignette(env, "run", "--source", source, "--config", task, "--model", spec, "--sample", "3", "--seed", "5",
                   "--size", "96x48", "--out", str(tmp_path / "run"))  # fmt: skip
    assert run.returncode == 0, run.stderr

    mine = {r["question_id"]: r for r in pq.read_table(tmp_path / "imp" / "responses.parquet").to_pylist()}
    theirs = {r["question_id"]: r for r in pq.read_table(tmp_path / "run" / "responses.parquet").to_pylist()}
    assert mine.keys() == theirs.keys() and len(mine) > 10
    assert any(r["valid"] for r in theirs.values())
    for qid, row in theirs.items():
        differ = {k for k in row if k != "model_id" and mine[qid].get(k) != row[k]}
        assert not differ, (qid, {k: (mine[qid].get(k), row[k]) for k in differ})
        assert mine[qid]["model_id"] == f"vignette/{spec}"

    record = RunRecord.from_json((tmp_path / "imp" / "run.json").read_text(), "run.json")
    ran_record = RunRecord.from_json((tmp_path / "run" / "run.json").read_text(), "run.json")
    assert record.imported is not None and record.imported.format == "inspect"
    assert record.dataset.source == source and record.settings.source == source
    assert record.dataset.index_sha256 == ran_record.dataset.index_sha256 is not None
    assert record.dataset.selection == ran_record.dataset.selection
    assert record.dataset.placeholder is True and placeholder_renders(record)  # the report's placeholder caveat
    assert record.settings.model_copy(update={"model": ""}) == ran_record.settings.model_copy(update={"model": ""})


def test_a_tiny_model_in_score_mode_chooses_as_in_vignette_run(
    env: dict[str, str], source: str, tmp_path: Path
) -> None:
    """A real model backend through the provider: the same choices as `vignette run`, probabilities to float
    precision (the provider asks one question at a time, the runner batches them)."""
    spec = "tiny:llava?mode=score"
    args = ("-T", "sample=1", "-T", "size=96x48")
    ran = inspect(env, "eval", "vignette_bench/identity_contrast", "--model", f"vignette/{spec}", "-T",
                  f"source={source}", *args, "--log-dir", str(tmp_path / "logs"), "--display", "none", cwd=tmp_path)  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert vignette(env, "import", "--format", "inspect", "--source", str(tmp_path / "logs"), "--out",
                    str(tmp_path / "imp")).returncode == 0  # fmt: skip
    run = vignette(env, "run", "--source", source, "--config", "identity_contrast", "--model", spec, "--sample", "1",
                   "--size", "96x48", "--out", str(tmp_path / "run"))  # fmt: skip
    assert run.returncode == 0, run.stderr
    mine = {r["question_id"]: r for r in pq.read_table(tmp_path / "imp" / "responses.parquet").to_pylist()}
    theirs = {r["question_id"]: r for r in pq.read_table(tmp_path / "run" / "responses.parquet").to_pylist()}
    assert mine.keys() == theirs.keys() and mine
    for qid, row in theirs.items():
        assert mine[qid]["choice"] == row["choice"] and mine[qid]["valid"] == row["valid"]
        assert mine[qid]["probabilities"] == pytest.approx(row["probabilities"], abs=1e-5)


FOREIGN_TASK = """
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import match

@task
def arithmetic():
    return Task(dataset=[Sample(input="1 + 1 =", target="2")], scorer=match())
"""


def test_failed_and_foreign_logs_are_one_error(env: dict[str, str], source: str, tmp_path: Path) -> None:
    """inspect's `eval` exits 0 whatever its tasks did; `eval-set` exits 1 unless every task succeeded. Either
    way the import of a failed log, or of a log of another task, is one error naming the log (exit 2)."""
    failed = tmp_path / "failed"
    ran = inspect(env, "eval-set", "vignette_bench/portraits", "--model", "vignette/tiny:nosuch",
                  "-T", f"source={source}", *TASK_ARGS, "--log-dir", str(failed), "--retry-attempts", "0",
                  "--display", "none", cwd=tmp_path)  # fmt: skip
    assert ran.returncode == 1, ran.stdout + ran.stderr
    out = vignette(env, "import", "--format", "inspect", "--source", str(failed), "--out", str(tmp_path / "x"))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    problems = [line for line in out.stderr.splitlines() if line.startswith("  ")]
    assert len(problems) == 1 and "the eval ended 'error'" in problems[0] and "unknown tiny family" in problems[0]
    assert not (tmp_path / "x").exists()

    (tmp_path / "arithmetic.py").write_text(FOREIGN_TASK)
    foreign = tmp_path / "foreign"
    ran = inspect(env, "eval", "arithmetic.py", "--model", "vignette/random", "--log-dir", str(foreign),
                  "--display", "none", cwd=tmp_path)  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr  # inspect's own rule: `inspect eval` does not fail
    out = vignette(env, "import", "--format", "inspect", "--source", str(foreign), "--out", str(tmp_path / "y"))
    problems = [line for line in out.stderr.splitlines() if line.startswith("  ")]
    assert out.returncode == 2 and len(problems) == 1 and "not of a VIGNETTE task" in problems[0], out.stderr


def test_a_bad_model_spec_or_task_argument_stops_the_command(env: dict[str, str], source: str, tmp_path: Path) -> None:
    bad_model = inspect(env, "eval", "vignette_bench/portraits", "--model", "vignette/nonsense",
                        "-T", f"source={source}", "--log-dir", str(tmp_path), cwd=tmp_path)  # fmt: skip
    assert bad_model.returncode == 1 and "unknown backend" in bad_model.stdout + bad_model.stderr
    bad_filter = inspect(env, "eval", "vignette_bench/portraits", "--model", "vignette/random",
                         "-T", f"source={source}", "-T", "filters=dimension=religion", "--log-dir", str(tmp_path), cwd=tmp_path)  # fmt: skip
    text = bad_filter.stdout + bad_filter.stderr
    assert bad_filter.returncode == 1 and "unknown key" in text and "Traceback" not in text
