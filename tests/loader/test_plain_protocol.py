"""The card's own line with `datasets` alone (issue 38): in a process where `vignette` and `vignette_bench`
cannot be imported, `datasets.load_dataset(SOURCE, "identity_contrast")` (and "portraits") returns the
protocol sample from a local folder, from a Hub repo (the local Hub stand-in over HTTP) and from a plain
Range-honouring HTTP server (the parquet builder on the files the manifest lists), streaming and not,
with exactly the lazy loader's pixels; and a run over those plain rows asks the same questions and gets
the same answers as a run over the lazy rows, which the leaderboard's protocol check accepts."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pyarrow.parquet as pq
import pytest

from tests.loader.hub_standin import serve_hub
from tests.loader.test_http import serve_folder
from vignette_bench.dataset_builder.protocol_sample import lazy_protocol_dataset
from vignette_bench.dataset_builder.sample import build_sample
from vignette_bench.eval.adapters.base import ChoiceRequest, ChoiceResult, ModelAdapter
from vignette_bench.eval.leaderboard.protocol import (
    plan_differences,
    plan_for,
    planned_questions,
    protocol_settings,
    source_pairs,
)
from vignette_bench.eval.runtime.plan import rows_source
from vignette_bench.eval.runtime.run import run

CONFIGS = ("identity_contrast", "portraits")
REPO = "vignette-test/vignette"

# Run with only `datasets` importable: a meta-path finder refuses the project's packages (the venv's editable
# install would otherwise find them), and the script proves the refusal before loading anything.
PLAIN = r"""
import hashlib, importlib.abc, json, sys, urllib.request

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("vignette", "vignette_bench"):
            raise ModuleNotFoundError(f"{name} is refused in this process", name=name)

sys.meta_path.insert(0, Refuse())
for name in ("vignette_bench", "vignette"):
    try:
        __import__(name)
    except ModuleNotFoundError:
        continue
    raise SystemExit(f"{name} could be imported: the check would prove nothing")

import numpy as np
import datasets

folder, repo, base, cache = sys.argv[1:5]
out = {}
for config in ("identity_contrast", "portraits"):
    manifest = json.loads(urllib.request.urlopen(f"{base}/protocol/{config}/manifest.json").read())
    urls = [f"{base}/protocol/{config}/{s['file']}" for s in manifest["shards"]]
    for streaming in (False, True):
        loads = {
            "folder": lambda: datasets.load_dataset(folder, config, split="test", streaming=streaming, cache_dir=f"{cache}/f"),
            "hub": lambda: datasets.load_dataset(repo, config, split="test", streaming=streaming, cache_dir=f"{cache}/h"),
            "http": lambda: datasets.load_dataset(
                "parquet", data_files={"test": urls}, split="test", streaming=streaming, cache_dir=f"{cache}/u"
            ),
        }
        for where, load in loads.items():
            rows = []
            for row in load():
                image = row.pop("image")
                pixels = hashlib.sha256(np.asarray(image).tobytes()).hexdigest()
                rows.append([type(image).__module__.split(".")[0], image.mode, list(image.size), pixels, row])
            out[f"{config} {where} streaming={streaming}"] = rows
assert not any(m.split(".")[0] in ("vignette", "vignette_bench") for m in sys.modules)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # renders above 352 px get reduced copies, so pairs compose from them, as in a real source
    src = build_sample(tmp_path_factory.mktemp("plain_protocol") / "src", size=400, news=False, protocol=True)
    assert (src / "reduced").is_dir()
    return src


def _pixels(image: Any) -> str:
    return hashlib.sha256(np.asarray(image).tobytes()).hexdigest()


def test_plain_datasets_alone_loads_each_config_with_the_lazy_loaders_pixels(source: Path, tmp_path: Path) -> None:
    with serve_hub(source, REPO) as (endpoint, hub_traffic), serve_folder(source) as (base, http_traffic):
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the project is not on the path
        env.update(HF_ENDPOINT=endpoint, HF_HUB_OFFLINE="0", HF_DATASETS_OFFLINE="0", HF_HUB_DISABLE_TELEMETRY="1")
        env.update(HF_HOME=str(tmp_path / "hf"))
        done = subprocess.run(
            [sys.executable, "-c", PLAIN, str(source), REPO, base, str(tmp_path / "cache")],
            env=env,
            cwd=tmp_path,  # not the repository: `-c` puts the working folder on sys.path
            capture_output=True,
            text=True,
            timeout=600,
        )
        hub_files = {p for p, r, _ in hub_traffic.requests if r != "api"}
        http_files = {p for p, _, _ in http_traffic.requests}
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(got) == 2 * 3 * 2
    for config in CONFIGS:
        lazy = lazy_protocol_dataset(str(source), config)
        want = []
        for i in range(len(lazy)):
            row = lazy[i]
            image = row.pop("image")
            want.append(["PIL", image.mode, list(image.size), _pixels(image), row])
        for where in ("folder", "hub", "http"):
            for streaming in (False, True):
                assert got[f"{config} {where} streaming={streaming}"] == want, (config, where, streaming)
        shards = {f"protocol/{config}/{f.name}" for f in (source / "protocol" / config).glob("*.parquet")}
        assert shards <= hub_files and shards <= http_files  # the bytes came over HTTP, not from the folder


class PixelAnswers(ModelAdapter):
    """Answers from the image's pixels (and the question): the same answers mean the same pixels reached it."""

    name = "pixel-answers"

    def choose(self, batch: list[ChoiceRequest]) -> list[ChoiceResult]:
        out = []
        for req in batch:
            seen = np.asarray(req.image).tobytes() if req.image is not None else b""
            k = int.from_bytes(hashlib.blake2b(req.question_id.encode() + seen, digest_size=4).digest(), "big")
            choice = req.options[k % len(req.options)]
            out.append(ChoiceResult(req.question_id, choice, raw=choice))
        return out

    def provenance(self) -> dict[str, Any]:
        return {"model_id": "test/pixel-answers", "model_revision": "", "adapter": self.name}


@pytest.mark.parametrize("config", CONFIGS)
def test_a_run_over_the_plain_rows_asks_and_gets_what_a_run_over_the_lazy_rows_does(
    source: Path, tmp_path: Path, config: str
) -> None:
    settings = protocol_settings(plan_for(config, source_pairs(str(source), config)), str(source), "pixel-answers")
    lazy = run(settings, tmp_path / "lazy", adapter=PixelAnswers(), progress=False)
    rows = datasets.load_dataset(str(source), config, split="test", cache_dir=str(tmp_path / "cache"))
    plain = run(
        settings,
        tmp_path / "plain",
        adapter=PixelAnswers(),
        source=rows_source(rows, {"selection": None, "files": f"protocol/{config}"}),
        progress=False,
    )
    assert lazy.responses is not None and plain.responses is not None
    columns = ["question_id", "pair_id", "options", "choice", "valid"]
    a, b = (pq.read_table(r, columns=columns).to_pylist() for r in (lazy.responses, plain.responses))
    assert a == b and len(a) == lazy.asked > 0
    # the leaderboard's protocol check: exactly the planned question ids, each row as the rebuilt plan has it
    plan = planned_questions(settings)
    assert {r["question_id"] for r in b} == set(plan.questions)
    assert plan_differences(pq.read_table(plain.responses).to_pandas(), plan) == []
