"""Issue 15, item 3: the OpenAI adapter's start-up probe, and the runner stopping when answers are mostly invalid.

Servers that ignore or refuse `response_format` are simulated with interceptors in front of our own server
(a 200 reply with prose, a 400 for any request that carries the schema); `test_transformers_serve.py` runs
the same checks against `transformers serve` itself.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.eval.serve.test_server import Recorder, SchemaFixtureAdapter
from vignette_bench.eval.adapters.base import BackendUnavailable, ChoiceRequest
from vignette_bench.eval.adapters.openai_adapter import PROBE_OPTIONS, ProbeFailed
from vignette_bench.eval.adapters.spec import build_adapter
from vignette_bench.eval.serve.server import ChatServer, Intercept


def _completion(content: str) -> Intercept:
    body = {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "prose-server",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
    }
    return Intercept(200, json.dumps(body))


class IgnoresSchema:
    """A server that answers every request with the same text, whatever response_format says."""

    def __init__(self, content: str) -> None:
        self.content, self.calls = content, 0

    def __call__(self, body: dict[str, Any]) -> Intercept:
        self.calls += 1
        return _completion(self.content)


def refuses_schema(body: dict[str, Any]) -> Intercept | None:
    if "response_format" in body:
        return Intercept(400, json.dumps({"error": {"message": "response_format is not supported"}}))
    return None


def test_a_server_that_enforces_the_schema_passes_and_is_recorded(capsys) -> None:
    recorder = Recorder()
    with ChatServer(SchemaFixtureAdapter(), served_model="fixture", interceptor=recorder) as server:
        adapter = build_adapter(f"openai:m@{server.base_url}?system_prompt=user&max_retries=0")
    assert adapter.provenance()["probe"] == {"response_format": "honoured", "server_model": "fixture"}
    sent = recorder.bodies[0]  # the probe is sent as choose sends its questions
    assert len(recorder.bodies) == 1 and [m["role"] for m in sent["messages"]] == ["user"]
    assert sent["response_format"]["json_schema"]["schema"]["properties"]["choice"]["enum"] == list(PROBE_OPTIONS)
    assert sent["temperature"] == 0 and sent["max_completion_tokens"] == 64
    assert "warning" not in capsys.readouterr().err


@pytest.mark.parametrize("reply", ["Banana.", '{"answer": "banana"}', '{"choice": "banana"}', "left"])
def test_a_server_that_ignores_the_schema_gets_a_warning_and_the_run_goes_on(capsys, reply: str) -> None:
    with ChatServer(SchemaFixtureAdapter(), interceptor=IgnoresSchema(reply)) as server:
        adapter = build_adapter(f"openai:m@{server.base_url}?max_retries=0")
        err = capsys.readouterr().err
        assert adapter.provenance()["probe"] == {"response_format": "ignored", "server_model": "prose-server"}
        assert err.startswith("warning:") and "ignores response_format" in err and repr(reply) in err
        # the run goes on: a bare option text is still read as the answer
        server.app.interceptor = IgnoresSchema("The person on the left.")
        result = adapter.choose([ChoiceRequest("q", None, "Who?", ("the person on the left", "the other"))])[0]
    assert result.valid and result.choice == "the person on the left"


def test_a_server_that_refuses_the_schema_is_an_error_naming_the_fix() -> None:
    with ChatServer(SchemaFixtureAdapter(), interceptor=refuses_schema) as server:
        with pytest.raises(ProbeFailed, match=r"refuses the response_format .* Add structured=false") as e:
            build_adapter(f"openai:m@{server.base_url}?max_retries=0")
        assert "response_format is not supported" in str(e.value)
        adapter = build_adapter(f"openai:m@{server.base_url}?max_retries=0&structured=false")
    assert adapter.provenance()["probe"]["response_format"] == "not sent"
    assert isinstance(e.value, BackendUnavailable)  # the runner's `error:` exit 2


@pytest.mark.parametrize(
    ("interceptor", "expected"),
    [
        (lambda body: Intercept(500, "template error: images need no system message"), "images need no system message"),
        (lambda body: Intercept(200, "not json at all"), "malformed reply"),
        (lambda body: Intercept(400, '{"error": {"message": "model m is not served here"}}'), "not served here"),
    ],
)
def test_a_server_that_cannot_answer_the_probe_is_an_error(interceptor: Any, expected: str) -> None:
    with ChatServer(SchemaFixtureAdapter(), interceptor=interceptor) as server:
        with pytest.raises(ProbeFailed, match="start-up probe") as e:
            build_adapter(f"openai:m@{server.base_url}?max_retries=0")
    assert expected in str(e.value) and "probe=false" in str(e.value) and "structured=false" not in str(e.value)


def test_a_dead_server_fails_at_start_up() -> None:
    with pytest.raises(ProbeFailed, match=r"127.0.0.1:9/v1: .* is the server up"):
        build_adapter("openai:m@http://127.0.0.1:9/v1?max_retries=0")


def test_the_probe_can_be_skipped_and_its_option_is_checked() -> None:
    recorder = Recorder()
    with ChatServer(SchemaFixtureAdapter(), interceptor=recorder) as server:
        adapter = build_adapter(f"openai:m@{server.base_url}?probe=false")
        with pytest.raises(ValueError, match="probe='yes': expected true or false"):
            build_adapter(f"openai:m@{server.base_url}?probe=yes")
    assert recorder.bodies == [] and adapter.provenance()["probe"] is None


def _run_cli(tmp_path: Path, spec: str, *extra: str) -> int:
    from vignette_bench.cli import main as cli
    from vignette_bench.dataset_builder.sample import build_sample

    src = tmp_path / "src"
    if not src.exists():
        build_sample(src, size=32, identities=("muslim", "hindu"), activities=("cooking",))  # 24 questions
    base = ["run", "--source", str(src), "--config", "identity_contrast", "--no-progress", "--batch-size", "4"]
    return cli([*base, "--model", spec, "--out", str(tmp_path / "run"), *extra])


def test_a_run_of_prose_answers_stops_with_exit_2_naming_the_error(tmp_path, capsys) -> None:
    """Before: the run exited 0 with 100% invalid answers. Now the probe warns, and the run stops after
    20 answers (5 batches of 4) with the count, the typical error and a raw reply; a rerun with
    --max-invalid 1 resumes and finishes."""
    import pandas as pd

    prose = IgnoresSchema("Honestly, I would rather not say.")
    with ChatServer(SchemaFixtureAdapter(), interceptor=prose) as server:
        spec = f"openai:m@{server.base_url}?max_retries=0"
        assert _run_cli(tmp_path, spec, "--max-invalid-after", "20") == 2
        err = capsys.readouterr().err
        assert "ignores response_format" in err
        assert "error: 20 of the 20 answers of this session are invalid (more than 90%)" in err
        assert "'answer is not one of the options'" in err and "rather not say" in err and "--max-invalid 1" in err
        assert prose.calls == 1 + 20  # the probe, then five batches; the last four questions were not asked
        record = json.loads((tmp_path / "run" / "run.json").read_text())
        assert record["model"]["probe"] == {"response_format": "ignored", "server_model": "prose-server"}
        assert _run_cli(tmp_path, spec, "--max-invalid", "1") == 0
    responses = pd.read_parquet(tmp_path / "run" / "responses.parquet")
    assert len(responses) == 24 and not responses["valid"].any()


class RefusesSome:
    """A working server whose model refuses 3 questions in 5 (prose instead of an option)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, body: dict[str, Any]) -> Intercept | None:
        self.calls += 1
        return _completion("I can't answer that.") if self.calls > 1 and self.calls % 5 in (0, 1, 2) else None


def test_a_model_that_refuses_often_is_not_stopped(tmp_path) -> None:
    """Refusals are invalid answers and a finding to report: 60% of them must not stop a run (the default
    threshold is 90%; a broken setup gives ~100%)."""
    import pandas as pd

    with ChatServer(SchemaFixtureAdapter(), interceptor=RefusesSome()) as server:
        assert _run_cli(tmp_path, f"openai:m@{server.base_url}?max_retries=0", "--max-invalid-after", "20") == 0
    valid = pd.read_parquet(tmp_path / "run" / "responses.parquet")["valid"]
    assert len(valid) == 24 and 0.5 <= 1 - valid.mean() <= 0.7


def test_bad_threshold_values_are_refused_before_the_run_folder(tmp_path, capsys) -> None:
    assert _run_cli(tmp_path, "random", "--max-invalid", "1.5") == 2
    assert "--max-invalid 1.5" in capsys.readouterr().err and not (tmp_path / "run").exists()


def test_our_server_refuses_logprobs_instead_of_dropping_them() -> None:
    import openai

    with ChatServer(SchemaFixtureAdapter()) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        msgs = [{"role": "user", "content": "Who?"}]
        for asked in ({"logprobs": True}, {"logprobs": True, "top_logprobs": 2}):
            with pytest.raises(openai.BadRequestError) as refused:
                client.chat.completions.create(model="m", messages=msgs, **asked)
            assert "logprobs are not supported" in refused.value.response.text
        assert client.chat.completions.create(model="m", messages=msgs, logprobs=False).choices[0].message.content
