"""The chat-completions server with a real (tiny, untrained) transformers VLM behind it, and its CLI.

The tiny model is built once into a per-session folder (VIGNETTE_TINY_DIR) by the project's spec parser.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from tests import REPO_ROOT
from vignette_bench.eval.adapters.base import ChoiceRequest, TextRequest
from vignette_bench.eval.adapters.openai_adapter import OpenAIAdapter
from vignette_bench.eval.adapters.spec import TINY_CACHE_ENV, build_adapter
from vignette_bench.eval.serve.server import ChatServer

ROOT = REPO_ROOT


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory):
    os.environ.setdefault(TINY_CACHE_ENV, str(tmp_path_factory.mktemp("tiny")))
    return build_adapter("tiny:llava?mode=generate&temperature=0")


def test_tiny_vlm_over_http_answers_within_the_options(tiny) -> None:
    image = Image.fromarray(np.random.default_rng(1).integers(0, 255, (32, 48, 3), dtype=np.uint8))
    with ChatServer(tiny, served_model="tiny-llava") as server:
        client = OpenAIAdapter("tiny-llava", base_url=server.base_url, api_key="x", max_retries=0, timeout_s=120)
        options = ("the person on the left", "the person on the right")
        choice = client.choose([ChoiceRequest("q", image, "Who is cooking?", options)])[0]
        text = client.generate_text([TextRequest("t", image, "Describe the image.", max_new_tokens=8)])[0]
    # outlines constrains the tiny model to the options, so even an untrained model answers validly.
    assert choice.valid and choice.choice in options and choice.extras["server_model"] == "tiny-llava"
    assert text.valid and isinstance(text.text, str)


def test_server_cli_serves_a_spec_until_stopped() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "vignette_bench", "serve", "--model", "random:seed=3", "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline()
        url = re.search(r"at (http://\S+/v1)", line).group(1)
        client = OpenAIAdapter("random", base_url=url, api_key="x", max_retries=0, timeout_s=30)
        results = client.choose([ChoiceRequest(f"q{i}", None, "pick", ("a", "b", "c")) for i in range(6)])
        assert all(r.valid and r.choice in ("a", "b", "c") for r in results)
        # The random responder has no free text: the server answers 500 and the adapter records it.
        text = client.generate_text([TextRequest("t", None, "x")])[0]
        assert not text.valid and "does not produce free text" in text.text
    finally:
        process.terminate()
        process.wait(timeout=10)
