"""render on a tiny FluxPipeline saved to disk and loaded by path: seeds, records, split, crash and resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import REPO_ROOT
from vignette_bench.dataset_builder.records import plan_renders, stable_seed
from vignette_bench.dataset_builder.render import RenderSettings, Share, finished_record, render_all
from vignette_bench.formats.render_record import RenderRecord
from vignette_bench.taxonomy import load_taxonomy

ROOT = REPO_ROOT
ARGS = ["--size", "32", "--steps", "2", "--max-sequence-length", "16", "--dimensions", "gender"]


@pytest.fixture(scope="module")
def tiny_flux(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from vignette_bench.dataset_builder.tiny_flux import build_tiny_flux

    return build_tiny_flux(tmp_path_factory.mktemp("model") / "tiny-flux")


def _settings(model: Path) -> RenderSettings:
    return RenderSettings(model=str(model), steps=2, width=32, height=32, device="cpu", max_sequence_length=16)


def _cli(out: Path, model: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    cmd = [
        sys.executable,
        "-m",
        "vignette_bench",
        "build",
        "render",
        "--out",
        str(out),
        "--model",
        str(model),
        *ARGS,
        *extra,
    ]
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", **(env or {})}
    return subprocess.Popen(cmd, cwd=ROOT, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _keys(acts: str) -> list[str]:
    return [s.key for s in plan_renders(load_taxonomy(), dimensions=["gender"], activities=acts.split(","))]


def test_same_seed_gives_identical_bytes_and_a_full_record(tiny_flux: Path, tmp_path: Path) -> None:
    specs = plan_renders(load_taxonomy(), dimensions=["gender"], activities=["cooking"], portraits=False)
    a = render_all(specs, tmp_path / "a", _settings(tiny_flux), progress=False)
    render_all(specs, tmp_path / "b", _settings(tiny_flux), progress=False)
    assert (a.assigned, a.rendered) == (2, 2)
    for s in specs:
        assert (tmp_path / "a" / f"{s.key}.png").read_bytes() == (tmp_path / "b" / f"{s.key}.png").read_bytes()
    man, woman = ((tmp_path / "a" / f"{s.key}.png").read_bytes() for s in specs)
    assert man != woman  # different key → different seed and prompt → different image
    rec = RenderRecord.from_json((tmp_path / "a" / f"{specs[0].key}.json").read_text(), "record")
    assert rec.seed == stable_seed(specs[0].key) and rec.prompt == "A man engaged in cooking, with their face visible."
    assert (rec.model_id, rec.steps, rec.guidance, rec.width, rec.height, rec.dtype) == (
        str(tiny_flux),
        2,
        3.5,
        32,
        32,
        "float32",
    )
    assert rec.scheduler == "FlowMatchEulerDiscreteScheduler" and rec.model_revision.startswith("local-sha256:")
    assert {"torch", "diffusers", "transformers", "python"} <= set(rec.versions) and rec.placeholder is False


def test_share_split_is_exact() -> None:
    specs = plan_renders(load_taxonomy(), dimensions=["gender"])
    parts = [
        Share.from_env(f"{j}/2", {"RANK": str(r), "WORLD_SIZE": "3"}).take(specs) for j in range(2) for r in range(3)
    ]
    keys = [s.key for p in parts for s in p]
    assert sorted(keys) == sorted(s.key for s in specs) and len(keys) == len(set(keys))
    with pytest.raises(ValueError, match="expected i/N"):
        Share.from_env("2of3", {})
    with pytest.raises(ValueError, match="bad split"):
        Share.from_env("3/3", {})


def test_two_processes_split_the_work_and_a_killed_one_resumes(tiny_flux: Path, tmp_path: Path) -> None:
    """Two CPU processes share the work (one by --shard, one by RANK/WORLD_SIZE); the first is killed
    midway and restarted: it redoes nothing finished, and together they render every key exactly once."""
    acts = "cooking,driving,eating,sleeping,cleaning"
    keys = _keys(acts)
    out0, out1 = tmp_path / "p0", tmp_path / "p1"  # separate folders, so "exactly once" is visible
    p0 = _cli(out0, tiny_flux, "--activities", acts, "--shard", "0/2", "--steps", "4")
    p1 = _cli(out1, tiny_flux, "--activities", acts, "--steps", "4", env={"RANK": "1", "WORLD_SIZE": "2"})
    deadline = time.time() + 300
    while time.time() < deadline and len(list(out0.glob("*.json"))) < 2 and p0.poll() is None:
        time.sleep(0.05)
    p0.send_signal(signal.SIGKILL)  # no cleanup, as in a crash or a preempted node
    p0.communicate()
    mine0 = keys[0::2]
    finished = {k for k in mine0 if finished_record(out0, k) is not None}
    assert 2 <= len(finished) < len(mine0), "the run must be killed midway for this test to mean anything"
    stamps = {
        p.name: (p.stat().st_ino, p.stat().st_mtime_ns)
        for k in finished
        for p in (out0 / f"{k}.png", out0 / f"{k}.json")
    }
    again = _cli(out0, tiny_flux, "--activities", acts, "--shard", "0/2", "--steps", "4")
    for p in (again, p1):
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
        if p is again:
            assert f"{len(mine0)} assigned, {len(finished)} already done, {len(mine0) - len(finished)} rendered" in err
    assert {p: ((out0 / p).stat().st_ino, (out0 / p).stat().st_mtime_ns) for p in stamps} == stamps
    assert not list(out0.glob(".*"))  # no temp files left behind
    done0 = {k for k in keys if finished_record(out0, k) is not None}
    done1 = {k for k in keys if finished_record(out1, k) is not None}
    assert done0 == set(mine0) and done1 == set(keys[1::2])
    assert len(list(out0.glob("*.png"))) + len(list(out1.glob("*.png"))) == len(keys)
    assert all(json.loads((out0 / f"{k}.json").read_text())["steps"] == 4 for k in done0)
    # A render made in another process with the same seed is byte-identical to an in-process one.
    key = keys[1]
    spec = next(
        s for s in plan_renders(load_taxonomy(), dimensions=["gender"], activities=acts.split(",")) if s.key == key
    )
    render_all(
        [spec], tmp_path / "here", RenderSettings(**{**_settings(tiny_flux).__dict__, "steps": 4}), progress=False
    )
    assert (tmp_path / "here" / f"{key}.png").read_bytes() == (out1 / f"{key}.png").read_bytes()


def test_check_rerenders_failures_with_a_new_recorded_seed(tiny_flux: Path, tmp_path: Path) -> None:
    from vignette_bench.dataset_builder.check import CheckSettings, check_renders, rerender_failures

    out = tmp_path / "c"
    spec = plan_renders(
        load_taxonomy(), dimensions=["gender"], activities=["cooking"], genders=["female"], portraits=False
    )[0]
    render_all([spec], out, _settings(tiny_flux), progress=False)
    before = (out / f"{spec.key}.png").read_bytes()
    results = check_renders(out, CheckSettings(), progress=False)
    assert not results[0].ok and "no face found" in results[0].reasons  # the tiny model draws noise, not people
    assert rerender_failures(out, results, device="cpu") == 1
    rec = RenderRecord.from_json((out / f"{spec.key}.json").read_text(), "record")
    assert rec.seed == stable_seed(spec.key, spec.seed) != spec.seed
    assert (rec.steps, rec.width, rec.max_sequence_length, rec.model_id) == (2, 32, 16, str(tiny_flux))
    assert (out / f"{spec.key}.png").read_bytes() != before
    # The new render is reproducible from its record alone.
    from dataclasses import replace

    render_all([replace(spec, seed=rec.seed)], tmp_path / "again", _settings(tiny_flux), progress=False)
    assert (tmp_path / "again" / f"{spec.key}.png").read_bytes() == (out / f"{spec.key}.png").read_bytes()


def test_a_render_with_an_outdated_prompt_is_redone(tiny_flux: Path, tmp_path: Path) -> None:
    specs = plan_renders(load_taxonomy(), dimensions=["gender"], activities=["cooking"], portraits=False)
    out = tmp_path / "p"
    render_all(specs, out, _settings(tiny_flux), progress=False)
    path = out / f"{specs[0].key}.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "prompt": "an older wording"}))
    report = render_all(specs, out, _settings(tiny_flux), progress=False)
    assert (report.already_done, report.rendered) == (1, 1)
    assert json.loads(path.read_text())["prompt"] == specs[0].prompt
