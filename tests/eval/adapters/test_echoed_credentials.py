"""A server that echoes the request's Authorization header never gets it into a run folder (issue 34, item 8):
a real `vignette run` through the OpenAI adapter against a local server that answers every request with the
Authorization header it received (Basic from the URL's user:password, or the Bearer API key)."""

from __future__ import annotations

import base64
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from vignette_bench.cli import main as vignette
from vignette_bench.dataset_builder.sample import build_sample
from vignette_bench.redaction import redact_reply

PASSWORD = "pw-S3cret"
API_KEY = "sk-echo0123456789abcdef"


class Echo(http.server.BaseHTTPRequestHandler):
    """A chat-completions endpoint whose answer is the request's Authorization header."""

    seen: list[str] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        auth = self.headers.get("Authorization") or ""
        Echo.seen.append(auth)
        body = json.dumps(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": f"you sent Authorization: {auth}"},
                    }
                ],
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def echo() -> Iterator[str]:
    Echo.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def _run(source: Path, out: Path, base_url: str) -> int:
    spec = f"openai:m@{base_url}?max_retries=0&concurrency=1&structured=false"
    argv = ["run", "--source", str(source), "--config", "portraits", "--model", spec, "--out", str(out)]
    argv += ["--sample", "1", "--size", "96x48", "--no-progress", "--paradigms", "stereotype", "--max-invalid", "1"]
    argv += ["--variants", "paraphrase=0", "--variants", "option_style=identity", "--variants", "modality=image"]
    return vignette(argv)


def _secrets_in(out: Path, secrets: list[str]) -> list[str]:
    return [
        f"{p.relative_to(out)}: {s[:6]}…"
        for p in out.rglob("*")
        if p.is_file()
        for s in secrets
        if s.encode() in p.read_bytes()
    ]


@pytest.mark.parametrize("how", ["basic", "bearer"])
def test_an_echoed_authorization_value_is_not_written(tmp_path: Path, echo: str, how: str, monkeypatch) -> None:
    source = build_sample(tmp_path / "src", size=48, identities=("man", "woman"), activities=("cooking",))
    if how == "basic":
        url = echo.replace("http://", f"http://user:{PASSWORD}@")
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        secrets = [PASSWORD, base64.b64encode(f"user:{PASSWORD}".encode()).decode()]
    else:
        url = echo
        monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
        secrets = [API_KEY]
    out = tmp_path / "run"
    assert _run(Path(source), out, url) == 0
    sent = {s for s in Echo.seen if s}
    assert sent and all(any(x in s for x in secrets) for s in sent)  # the server did see (and echo) the credential
    raws = pq.read_table(out / "responses.parquet", columns=["raw"]).column("raw").to_pylist()
    assert raws and all(r.startswith("you sent Authorization: ") and "***" in r for r in raws), raws[:2]
    parts = list((out / "log").glob("part-*.jsonl"))
    assert parts and "you sent Authorization" in parts[0].read_text()
    assert _secrets_in(out, secrets) == []


def test_prose_about_tokens_is_kept_and_credential_shapes_are_masked() -> None:
    assert redact_reply("basic reasoning says left") == "basic reasoning says left"
    assert redact_reply("the token is nice") == "the token is nice"
    assert redact_reply("Basic dXNlcjpwdw==") == "Basic ***"
    assert redact_reply("Bearer abc.def-123456") == "Bearer ***"
    assert redact_reply('{"authorization": "Token whatever"}') == '{"authorization": "***"}'
    assert redact_reply("key sk-proj-0123456789abcdef") == "key ***"
