"""The OpenAI adapter against our chat-completions server over real HTTP (the `openai` client inside).

`SchemaFixtureAdapter` is a TEST FIXTURE, not part of the product: a deterministic backend that
always answers well-formed, so the success paths of the adapter, the news answerer and the judge can
be exercised; the untrained tiny VLM covers the failure paths.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from typing import Any

import numpy as np
import pytest
from PIL import Image

from vignette_bench.eval.adapters.base import ChoiceRequest, ChoiceResult, ModelAdapter, TextRequest, TextResult
from vignette_bench.eval.adapters.openai_adapter import OpenAIAdapter, match_option
from vignette_bench.eval.serve.server import ChatServer, Intercept


def _fill(schema: dict[str, Any], prompt: str) -> dict[str, Any]:
    """A schema-valid object whose numbers are a hash of the prompt (deterministic, in range)."""
    digest = int(hashlib.sha256(prompt.encode()).hexdigest()[:8], 16)
    out: dict[str, Any] = {}
    for name, prop in schema.get("properties", {}).items():
        if prop.get("type") in ("number", "integer"):
            low, high = prop.get("minimum", 0), prop.get("maximum", 100)
            out[name] = low + digest % (int(high - low) + 1)
        else:
            out[name] = f"fixture {name}"
    return out


class SchemaFixtureAdapter(ModelAdapter):
    """TEST FIXTURE: picks the last option; free text is a schema-valid JSON object derived from the prompt."""

    name = "schema-fixture"

    def __init__(self) -> None:
        self.seen: list[Any] = []
        self._lock = threading.Lock()

    def choose(self, batch: list[ChoiceRequest]) -> list[ChoiceResult]:
        with self._lock:
            self.seen.extend(batch)
        return [ChoiceResult(r.question_id, r.options[-1], r.options[-1]) for r in batch]

    def generate_text(self, batch: list[TextRequest]) -> list[TextResult]:
        with self._lock:
            self.seen.extend(batch)
        return [
            TextResult(
                r.question_id,
                json.dumps(_fill(r.json_schema, r.prompt)) if r.json_schema else f"plain text for: {r.prompt}",
            )
            for r in batch
        ]

    def provenance(self) -> dict[str, Any]:
        return {"adapter": "schema-fixture", "model_id": "schema-fixture"}


class FailFirst:
    """Interceptor: answer the first `times` requests with `status` (and headers), then pass through."""

    def __init__(self, times: int, status: int, headers: tuple[tuple[str, str], ...] = ()) -> None:
        self.times, self.status, self.headers, self.calls = times, status, headers, 0
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Intercept | None:
        with self._lock:
            self.calls += 1
            if self.calls <= self.times:
                return Intercept(
                    self.status, json.dumps({"error": {"message": "injected", "code": self.status}}), self.headers
                )
        return None


FAST = {"max_retries": 3, "backoff_base_s": 0.01, "backoff_max_s": 0.05}


def _image() -> Image.Image:
    rng = np.random.default_rng(0)
    return Image.fromarray(rng.integers(0, 255, (12, 16, 3), dtype=np.uint8))


def _adapter(server: ChatServer, **kwargs: Any) -> OpenAIAdapter:
    return OpenAIAdapter("served", base_url=server.base_url, api_key="test", **{**FAST, **kwargs})


def test_choose_over_http_sends_image_and_options() -> None:
    backend = SchemaFixtureAdapter()
    image = _image()
    with ChatServer(backend) as server:
        results = _adapter(server).choose([ChoiceRequest("q1", image, "Who is cooking?", ("left", "right"))])
    assert results[0].valid and results[0].choice == "right" and results[0].extras["attempts"] == 1
    received = backend.seen[0]
    assert received.options == ("left", "right") and "Who is cooking?" in received.prompt
    assert np.array_equal(np.asarray(received.image.convert("RGB")), np.asarray(image))  # PNG data URL is lossless


def test_generate_text_passes_schema_and_limits() -> None:
    backend = SchemaFixtureAdapter()
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    with ChatServer(backend) as server:
        results = _adapter(server).generate_text(
            [
                TextRequest("t1", None, "Say hi", json_schema=schema, max_new_tokens=17, temperature=0.2),
                TextRequest("t2", _image(), "Plain please"),
            ]
        )
    assert json.loads(results[0].text) == {"answer": "fixture answer"}
    assert results[1].text == "plain text for: Plain please"
    first = next(r for r in backend.seen if r.question_id and r.prompt == "Say hi")
    assert first.json_schema == schema and first.max_new_tokens == 17 and first.temperature == 0.2


@pytest.mark.parametrize("status", [500, 503, 429])
def test_transient_errors_are_retried_until_success(status: int) -> None:
    failing = FailFirst(2, status, (("Retry-After", "0"),))
    with ChatServer(SchemaFixtureAdapter(), interceptor=failing) as server:
        result = _adapter(server).choose([ChoiceRequest("q", None, "pick", ("a", "b"))])[0]
    assert result.valid and result.choice == "b"
    assert result.extras["attempts"] == 3 and failing.calls == 3


def test_retries_exhausted_is_invalid_with_raw_body() -> None:
    failing = FailFirst(100, 500)
    with ChatServer(SchemaFixtureAdapter(), interceptor=failing) as server:
        result = _adapter(server).choose([ChoiceRequest("q", None, "pick", ("a", "b"))])[0]
    assert not result.valid and result.choice is None
    assert "InternalServerError" in result.error and "injected" in result.raw
    assert failing.calls == FAST["max_retries"] + 1


def test_client_errors_are_not_retried() -> None:
    failing = FailFirst(100, 400)
    with ChatServer(SchemaFixtureAdapter(), interceptor=failing) as server:
        result = _adapter(server).generate_text([TextRequest("t", None, "x")])[0]
    assert not result.valid and "BadRequestError" in result.error and failing.calls == 1


def test_timeout_is_retried_then_recorded_invalid() -> None:
    calls = []

    def slow(body: dict[str, Any]) -> Intercept:
        calls.append(1)
        return Intercept(200, "{}", delay_s=0.6)

    with ChatServer(SchemaFixtureAdapter(), interceptor=slow) as server:
        adapter = _adapter(server, timeout_s=0.15, max_retries=1)
        result = adapter.choose([ChoiceRequest("q", None, "pick", ("a", "b"))])[0]
    assert not result.valid and "Timeout" in result.error and len(calls) == 2


@pytest.mark.parametrize(
    "body", ["this is not json", json.dumps({"id": "x", "object": "chat.completion"}), json.dumps({"choices": []})]
)
def test_malformed_reply_is_invalid_with_raw_text(body: str) -> None:
    with ChatServer(SchemaFixtureAdapter(), interceptor=lambda _: Intercept(200, body)) as server:
        result = _adapter(server).choose([ChoiceRequest("q", None, "pick", ("a", "b"))])[0]
        text = _adapter(server).generate_text([TextRequest("t", None, "x")])[0]
    assert not result.valid and result.choice is None and result.raw == body and "malformed" in result.error
    assert not text.valid and text.text == body


def test_answer_outside_options_is_invalid_with_raw_text() -> None:
    reply = {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": '{"choice": "neither of them"}'},
            }
        ],
    }
    with ChatServer(SchemaFixtureAdapter(), interceptor=lambda _: Intercept(200, json.dumps(reply))) as server:
        result = _adapter(server).choose([ChoiceRequest("q", None, "pick", ("a", "b"))])[0]
    assert not result.valid and result.choice is None
    assert result.raw == '{"choice": "neither of them"}' and "not one of the options" in result.error


def test_match_option_accepts_json_or_bare_text_only() -> None:
    options = ("the person on the left", "the person on the right")
    assert match_option('{"choice": "the person on the left"}', options) == "the person on the left"
    assert match_option("The person on the right.", options) == "the person on the right"
    assert match_option("left", options) is None
    assert match_option('{"choice": 3}', options) is None


def test_concurrency_is_bounded_and_order_kept() -> None:
    state = {"now": 0, "peak": 0}
    lock = threading.Lock()

    def track(body: dict[str, Any]) -> None:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.15)
        with lock:
            state["now"] -= 1
        return None

    batch = [ChoiceRequest(f"q{i}", None, f"pick {i}", (f"a{i}", f"b{i}")) for i in range(6)]
    with ChatServer(SchemaFixtureAdapter(), interceptor=track) as server:
        results = _adapter(server, concurrency=2).choose(batch)
    assert [r.question_id for r in results] == [f"q{i}" for i in range(6)]
    assert [r.choice for r in results] == [f"b{i}" for i in range(6)]
    assert state["peak"] == 2


def test_server_rejects_what_it_cannot_answer() -> None:
    import openai

    with ChatServer(SchemaFixtureAdapter()) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        with pytest.raises(openai.BadRequestError, match="data URLs"):
            client.chat.completions.create(
                model="m",
                messages=[
                    {
                        "role": "user",
                        "content": [{"type": "image_url", "image_url": {"url": "http://example.com/a.png"}}],
                    }
                ],
            )
        with pytest.raises(openai.BadRequestError, match="stream"):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}], stream=True)
        assert [m.id for m in client.models.list().data] == ["schema-fixture"]


def test_adapter_errors_become_500_and_are_recorded() -> None:
    class Broken(SchemaFixtureAdapter):
        def generate_text(self, batch: list[TextRequest]) -> list[TextResult]:
            raise RuntimeError("out of memory")

    with ChatServer(Broken()) as server:
        result = _adapter(server, max_retries=1).generate_text([TextRequest("t", None, "x")])[0]
    assert not result.valid and "out of memory" in result.text


def test_provenance_names_settings_not_key() -> None:
    adapter = OpenAIAdapter("gpt-4o", base_url="http://127.0.0.1:1/v1", api_key="sk-secret", temperature=0.7)
    prov = adapter.provenance()
    assert prov["model_id"] == "gpt-4o" and prov["temperature"] == 0.7 and "sk-secret" not in json.dumps(prov)


# --- issue 15: system prompt placement, secrets, dead servers, sampling the server can honour ------------


class Recorder:
    """Interceptor that records every request body and lets it through."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> Intercept | None:
        self.bodies.append(body)
        return None


@pytest.mark.parametrize(
    ("placement", "roles", "folded"),
    [("system", ["system", "user"], False), ("user", ["user"], True), ("none", ["user"], False)],
)
def test_system_prompt_placement(placement: str, roles: list[str], folded: bool) -> None:
    from vignette_bench.eval.adapters.openai_adapter import CHOICE_SYSTEM_PROMPT

    recorder = Recorder()
    backend = SchemaFixtureAdapter()
    with ChatServer(backend, interceptor=recorder) as server:
        result = _adapter(server, system_prompt=placement).choose([ChoiceRequest("q", _image(), "Who?", ("a", "b"))])[0]
    assert result.valid
    assert [m["role"] for m in recorder.bodies[0]["messages"]] == roles
    assert (CHOICE_SYSTEM_PROMPT[:30] in backend.seen[0].prompt) == folded or placement == "system"


def test_an_echoed_key_is_redacted_from_raw_replies_and_errors() -> None:
    key = "sk-very-secret-key-123"

    def echo(body: dict[str, Any]) -> Intercept:
        return Intercept(401, json.dumps({"error": {"message": f"bad key Bearer {key} for {key}"}}))

    with ChatServer(SchemaFixtureAdapter(), interceptor=echo) as server:
        adapter = OpenAIAdapter("served", base_url=server.base_url, api_key=key, **FAST)
        result = adapter.choose([ChoiceRequest("q", None, "Who?", ("a", "b"))])[0]
    assert not result.valid and key not in (result.raw or "") and key not in (result.error or "")
    assert "[REDACTED]" in (result.raw or "")


def test_credentials_in_the_base_url_never_reach_provenance() -> None:
    adapter = OpenAIAdapter("m", base_url="https://user:hunter2@example.org:8443/v1?token=abc", api_key="k")
    assert adapter.provenance()["base_url"] == "https://example.org:8443/v1"
    assert "hunter2" not in json.dumps(adapter.provenance())


def test_a_dead_server_stops_the_adapter_after_n_failures() -> None:
    from vignette_bench.eval.adapters.base import BackendUnavailable

    adapter = OpenAIAdapter(
        "m", base_url="http://127.0.0.1:9/v1", api_key="k", max_retries=0, max_consecutive_failures=3, concurrency=1
    )
    with pytest.raises(BackendUnavailable, match=r"127.0.0.1:9/v1: 3 requests in a row failed"):
        adapter.choose([ChoiceRequest(f"q{i}", None, "Who?", ("a", "b")) for i in range(5)])


def test_the_runner_exits_2_when_the_backend_is_gone(tmp_path) -> None:
    from vignette_bench.cli import main as cli
    from vignette_bench.dataset_builder.sample import build_sample

    src = build_sample(tmp_path / "src", size=32, identities=("muslim", "hindu"), activities=("cooking",))
    spec = "openai:m@http://127.0.0.1:9/v1?max_retries=0&max_consecutive_failures=2&concurrency=1"
    code = cli(
        [
            "run",
            "--source",
            str(src),
            "--config",
            "identity_contrast",
            "--model",
            spec,
            "--out",
            str(tmp_path / "run"),
            "--no-progress",
        ]
    )
    assert code == 2


def test_our_server_rejects_sampling_it_cannot_honour() -> None:
    with ChatServer(SchemaFixtureAdapter()) as server:
        client = __import__("openai").OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        schema = {"type": "object", "properties": {"choice": {"enum": ["a", "b"]}}, "required": ["choice"]}
        fmt = {"type": "json_schema", "json_schema": {"name": "c", "schema": schema}}
        msgs = [{"role": "user", "content": "Who?"}]
        for bad in ({"temperature": 0.7, "response_format": fmt}, {"top_p": 0.5}, {"seed": -1}, {"temperature": 3}):
            with pytest.raises(__import__("openai").BadRequestError):
                client.chat.completions.create(model="m", messages=msgs, **bad)
        ok = client.chat.completions.create(model="m", messages=msgs, temperature=0, seed=7, response_format=fmt)
        assert json.loads(ok.choices[0].message.content) == {"choice": "b"}


def test_our_server_is_deterministic_per_seed_with_a_sampling_tiny_vlm() -> None:
    """A tiny untrained VLM sampling free text at T = 1: the same request and seed give the same text;
    12 identical requests at T = 0 give one answer."""
    from vignette_bench.eval.adapters.spec import build_adapter

    backend = build_adapter("tiny:llava?mode=generate")
    with ChatServer(backend) as server:
        client = __import__("openai").OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        msgs = [{"role": "user", "content": "Describe the scene."}]

        def ask(**kw: Any) -> str:
            return (
                client.chat.completions.create(model="m", messages=msgs, max_tokens=8, **kw).choices[0].message.content
            )

        assert len({ask(temperature=0) for _ in range(12)}) == 1
        assert ask(temperature=1.0, seed=5) == ask(temperature=1.0, seed=5)


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--batch-size", "0"], "--batch-size 0: must be at least 1"), (["--model", "tiny:nonexistent"], "")],
)
def test_bad_runner_input_exits_2_and_leaves_no_folder(tmp_path, capsys, args: list[str], message: str) -> None:
    from vignette_bench.cli import main as cli
    from vignette_bench.dataset_builder.sample import build_sample

    src = build_sample(tmp_path / "src", size=32, identities=("muslim", "hindu"), activities=("cooking",))
    base = [
        "run",
        "--source",
        str(src),
        "--config",
        "identity_contrast",
        "--model",
        "random",
        "--out",
        str(tmp_path / "run"),
        "--no-progress",
    ]
    if args[0] == "--model":
        base[base.index("--model") + 1] = args[1]
        args = []
    assert cli([*base, *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and message in err
    assert not (tmp_path / "run").exists()


def test_responses_keep_attempts_server_model_and_option_logprobs(tmp_path) -> None:
    import pandas as pd

    from vignette_bench.cli import main as cli
    from vignette_bench.dataset_builder.sample import build_sample

    src = build_sample(tmp_path / "src", size=32, identities=("muslim", "hindu"), activities=("cooking",))
    base = ["run", "--source", str(src), "--config", "identity_contrast", "--no-progress"]
    with ChatServer(SchemaFixtureAdapter(), served_model="fixture-served") as server:
        spec = f"openai:asked-name@{server.base_url}?max_retries=0"
        assert cli([*base, "--model", spec, "--out", str(tmp_path / "api")]) == 0
    api = pd.read_parquet(tmp_path / "api" / "responses.parquet")
    assert (api["attempts"] == 1).all() and (api["server_model"] == "fixture-served").all()
    assert cli([*base, "--model", "tiny:llava?mode=score", "--out", str(tmp_path / "tiny")]) == 0
    tiny = pd.read_parquet(tmp_path / "tiny" / "responses.parquet")
    valid = tiny[tiny["valid"]]
    assert len(valid) and all(len(lp) == len(o) for lp, o in zip(valid["option_logprobs"], valid["options"]))
    assert tiny["attempts"].isna().all()
