"""A third-party OpenAI-compatible server in the tests (issue 15, item 8): `transformers serve`
(transformers[serving]: fastapi + uvicorn) with a tiny random LLaVA saved to disk, on 127.0.0.1.

What it does with our requests (transformers 5.23): it answers chat completions with images, and
silently drops `response_format` and `logprobs` (a warning in its own log; the client gets a 200).
So the probe reports the ignored schema, every answer of the untrained model is prose outside the
options, and `vignette run` stops with exit 2 after 20 answers instead of exiting 0 with a parquet of
invalid rows. With `--max-invalid 1` the same run finishes and keeps each raw reply.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("fastapi", reason="`transformers serve` needs transformers[serving]: pip install -e '.[dev]'")
pytest.importorskip("uvicorn", reason="`transformers serve` needs transformers[serving]: pip install -e '.[dev]'")

from vignette_bench.eval.adapters.base import ChoiceRequest  # noqa: E402
from vignette_bench.eval.adapters.openai_adapter import PROBE_OPTIONS, image_to_data_url  # noqa: E402
from vignette_bench.eval.adapters.spec import build_adapter  # noqa: E402
from vignette_bench.eval.adapters.tiny import build_tiny_vlm  # noqa: E402

START_TIMEOUT_S = 90


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Served:
    def __init__(self, model: Path, url: str, log: Path) -> None:
        self.model, self.url, self.log = model, url, log

    @property
    def spec(self) -> str:
        return f"openai:{self.model}@{self.url}?max_retries=0&choice_max_tokens=8"  # pinned to the path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("transformers-serve")
    model = build_tiny_vlm("llava", tmp / "llava")
    port, log = _free_port(), tmp / "serve.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp / "hf-home")}
    command = [sys.executable, "-m", "transformers.cli.transformers", "serve", str(model)]
    with open(log, "w") as out:
        process = subprocess.Popen(
            [*command, "--host", "127.0.0.1", "--port", str(port), "--device", "cpu"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                pytest.fail(f"transformers serve exited with {process.returncode}:\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"transformers serve not up after {START_TIMEOUT_S} s:\n{log.read_text()[-3000:]}")
            time.sleep(0.25)
        yield Served(model, f"http://127.0.0.1:{port}/v1", log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _image() -> Image.Image:
    return Image.fromarray(np.random.default_rng(3).integers(0, 255, (48, 96, 3), dtype=np.uint8))


def test_the_openai_client_gets_answers_but_no_schema_or_logprobs(served: Served) -> None:
    import openai

    client = openai.OpenAI(base_url=served.url, api_key="unused", max_retries=0, timeout=60)
    schema = {"type": "object", "properties": {"choice": {"type": "string", "enum": list(PROBE_OPTIONS)}}}
    content = [
        {"type": "image_url", "image_url": {"url": image_to_data_url(_image())}},
        {"type": "text", "text": "Who is cooking?"},
    ]
    reply = client.chat.completions.create(
        model=str(served.model),
        messages=[{"role": "user", "content": content}],
        max_completion_tokens=8,
        temperature=0,
        response_format={"type": "json_schema", "json_schema": {"name": "choice", "schema": schema, "strict": True}},
        logprobs=True,
        top_logprobs=2,
    )
    choice = reply.choices[0]
    assert reply.model == f"{served.model}@main" and isinstance(choice.message.content, str)
    assert choice.logprobs is None  # asked for, silently dropped
    with pytest.raises(json.JSONDecodeError):
        json.loads(choice.message.content)  # the schema was not enforced
    assert "Ignoring unsupported fields" in served.log.read_text() and "response_format" in served.log.read_text()
    with pytest.raises(openai.BadRequestError) as refused:  # a model name other than the served path
        client.chat.completions.create(model="other", messages=[{"role": "user", "content": "hi"}])
    assert "pinned" in refused.value.response.text


def test_the_probe_says_the_schema_is_ignored_and_answers_keep_their_raw_text(served: Served, capsys) -> None:
    adapter = build_adapter(served.spec)
    err = capsys.readouterr().err
    assert adapter.provenance()["probe"] == {"response_format": "ignored", "server_model": f"{served.model}@main"}
    assert err.startswith("warning: http://127.0.0.1:") and "ignores response_format" in err
    options = ("the person on the left", "the person on the right")
    result = adapter.choose([ChoiceRequest("q", _image(), "Who is cooking?", options)])[0]
    assert not result.valid and result.error == "answer is not one of the options" and result.raw
    assert result.extras == {"attempts": 1, "server_model": f"{served.model}@main"}


def test_vignette_run_stops_on_invalid_answers_then_finishes_when_told(served: Served, tmp_path, capsys) -> None:
    import pandas as pd

    from vignette_bench.cli import main as cli
    from vignette_bench.dataset_builder.sample import build_sample

    src = build_sample(tmp_path / "src", size=32, identities=("muslim", "hindu"), activities=("cooking",))
    out = tmp_path / "run"
    base = ["run", "--source", str(src), "--config", "identity_contrast", "--no-progress", "--batch-size", "4"]
    base += ["--model", served.spec, "--out", str(out)]
    assert cli([*base, "--max-invalid-after", "20"]) == 2
    err = capsys.readouterr().err
    assert "ignores response_format" in err
    assert "error: 20 of the 20 answers of this session are invalid" in err and "not one of the options" in err
    assert json.loads((out / "run.json").read_text())["model"]["probe"]["response_format"] == "ignored"
    assert cli([*base, "--max-invalid", "1"]) == 0
    responses = pd.read_parquet(out / "responses.parquet")
    assert len(responses) == 24 and (responses["server_model"] == f"{served.model}@main").all()
    assert (responses["attempts"] == 1).all() and responses["raw"].str.len().gt(0).all()
