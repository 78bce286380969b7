"""A small OpenAI-compatible chat-completions server that answers with any local adapter.

`vignette serve --model SPEC --port 8000` serves POST /v1/chat/completions and
GET /v1/models on 127.0.0.1. A request whose `response_format` json_schema is an object with one
`choice` property holding an `enum` goes to `adapter.choose` (that is how `OpenAIAdapter.choose`
asks); every other request goes to `adapter.generate_text` with the schema passed on. It exists to
test the OpenAI adapter over real HTTP and to put a local model behind tools that only speak the
OpenAI protocol; it is not a production server (one adapter call at a time, data-URL images only).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from PIL import Image

from vignette_bench import cli_options as opt
from vignette_bench.errors import VignetteError
from vignette_bench.eval.adapters.base import ChoiceRequest, ModelAdapter, TextRequest


class BadRequest(VignetteError):
    """The request cannot be answered as sent; becomes an HTTP 400 with this message."""


@dataclass(frozen=True)
class Intercept:
    """What an interceptor returns to answer a request itself (used by tests to inject faults)."""

    status: int
    body: str | bytes
    headers: tuple[tuple[str, str], ...] = ()
    delay_s: float = 0.0


Interceptor = Callable[[dict[str, Any]], Intercept | None]


def decode_image(url: str) -> Image.Image:
    if not url.startswith("data:") or ";base64," not in url:
        raise BadRequest("only base64 data URLs are accepted for images (this server never fetches URLs)")
    try:
        image = Image.open(io.BytesIO(base64.b64decode(url.split(";base64,", 1)[1], validate=True)))
        image.load()
    except Exception as error:  # noqa: BLE001 — any undecodable image is the client's error
        raise BadRequest(f"image data URL does not decode: {error}") from error
    return image


def read_messages(messages: Any) -> tuple[str, Image.Image | None]:
    """All text parts in order, joined by blank lines, and the one image (if any)."""
    if not isinstance(messages, list) or not messages:
        raise BadRequest("'messages' must be a non-empty list")
    texts: list[str] = []
    images: list[Image.Image] = []
    for index, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            texts.append(content)
            continue
        if not isinstance(content, list):
            raise BadRequest(f"messages[{index}].content must be a string or a list of parts")
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text":
                texts.append(str(part.get("text", "")))
            elif kind == "image_url":
                url = part.get("image_url")
                images.append(decode_image(url.get("url", "") if isinstance(url, dict) else str(url)))
            else:
                raise BadRequest(f"messages[{index}] has an unsupported content part type {kind!r}")
    if len(images) > 1:
        raise BadRequest(f"at most one image per request is supported, got {len(images)}")
    return "\n\n".join(texts), (images[0] if images else None)


def requested_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    response_format = body.get("response_format")
    if not response_format or response_format.get("type") == "text":
        return None
    if response_format.get("type") != "json_schema":
        raise BadRequest(f"response_format type {response_format.get('type')!r} is not supported; use json_schema")
    schema = (response_format.get("json_schema") or {}).get("schema")
    if not isinstance(schema, dict):
        raise BadRequest("response_format.json_schema.schema must be an object")
    return schema


def choice_options(schema: dict[str, Any] | None) -> tuple[str, ...] | None:
    properties = (schema or {}).get("properties")
    if not isinstance(properties, dict) or set(properties) != {"choice"}:
        return None
    enum = properties["choice"].get("enum")
    return tuple(str(option) for option in enum) if isinstance(enum, list) and enum else None


def sampling(body: dict[str, Any], choice: bool) -> tuple[float, int]:
    """The temperature and seed a request asks for, refusing what this server cannot honour."""
    temperature = body.get("temperature", 0.0)
    if temperature is None:
        temperature = 0.0
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not 0 <= temperature <= 2:
        raise BadRequest(f"temperature must be a number in [0, 2], got {temperature!r}")
    if choice and temperature != 0:
        raise BadRequest(
            "choice requests are answered deterministically (greedy or by option scores); send temperature 0"
        )
    top_p = body.get("top_p")
    if top_p not in (None, 1, 1.0):
        raise BadRequest(f"top_p {top_p!r} is not supported (only 1)")
    seed = body.get("seed", 0)
    if seed is None:
        seed = 0
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise BadRequest(f"seed must be a whole number >= 0, got {seed!r}")
    return float(temperature), seed


def seed_everything(seed: int) -> None:
    import random

    import numpy as np

    random.seed(seed)
    np.random.seed(seed % 2**32)
    try:
        import torch

        torch.manual_seed(seed)
    except ImportError:  # a server over a non-torch adapter
        pass


class ChatCompletionsApp:
    """Turns one chat-completions body into one adapter call; the lock keeps one model call at a time."""

    def __init__(self, adapter: ModelAdapter, served_model: str, interceptor: Interceptor | None = None) -> None:
        self.adapter = adapter
        self.served_model = served_model
        self.interceptor = interceptor
        self._lock = threading.Lock()

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        if body.get("stream"):
            raise BadRequest("stream=true is not supported")
        if body.get("n", 1) != 1:
            raise BadRequest("only n=1 is supported")
        if body.get("logprobs") or body.get("top_logprobs"):  # refused, not dropped: a client may rely on them
            raise BadRequest("logprobs are not supported by this server")
        prompt, image = read_messages(body.get("messages"))
        schema = requested_schema(body)
        options = choice_options(schema)
        temperature, seed = sampling(body, options is not None)
        request_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        # Adapters seed sampling per question id: derive it from the request and its seed, so the same
        # request with the same seed gets the same answer, whatever came before.
        question_id = hashlib.sha256(
            json.dumps([seed, body.get("messages"), schema], sort_keys=True).encode()
        ).hexdigest()[:24]
        max_tokens = int(body.get("max_completion_tokens") or body.get("max_tokens") or 128)
        with self._lock:
            seed_everything(seed)  # same request, same seed: same answer
            if options is not None:
                result = self.adapter.choose([ChoiceRequest(question_id, image, prompt, options)])[0]
                content = json.dumps({"choice": result.choice}) if result.valid else result.raw
            else:
                text = self.adapter.generate_text(
                    [
                        TextRequest(
                            question_id,
                            image,
                            prompt,
                            json_schema=schema,
                            max_new_tokens=max_tokens,
                            temperature=temperature,
                        )
                    ]
                )[0]
                content = text.text
        return {
            "id": request_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.served_model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        }


def _handler(app: ChatCompletionsApp) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 — keep test output quiet
            pass

        def _send(
            self, status: int, body: str | bytes | dict[str, Any], headers: tuple[tuple[str, str], ...] = ()
        ) -> None:
            data = (
                json.dumps(body).encode()
                if isinstance(body, dict)
                else (body.encode() if isinstance(body, str) else body)
            )
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message: str, kind: str) -> None:
            self._send(status, {"error": {"message": message, "type": kind, "code": status}})

        def do_GET(self) -> None:  # noqa: N802 — http.server naming
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": app.served_model, "object": "model"}]})
            else:
                self._error(404, f"no route {self.path}", "not_found")

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._error(404, f"no route {self.path}", "not_found")
                return
            try:
                body = json.loads(raw)
                if not isinstance(body, dict):
                    raise BadRequest("the request body must be a JSON object")
            except (json.JSONDecodeError, BadRequest) as error:
                self._error(400, f"bad request body: {error}", "invalid_request_error")
                return
            if app.interceptor is not None:
                intercept = app.interceptor(body)
                if intercept is not None:
                    time.sleep(intercept.delay_s)
                    self._send(intercept.status, intercept.body, intercept.headers)
                    return
            try:
                self._send(200, app.complete(body))
            except BadRequest as error:
                self._error(400, str(error), "invalid_request_error")
            except Exception as error:  # noqa: BLE001 — the adapter failed: the client sees a 500 and may retry
                self._error(500, f"{type(error).__name__}: {error}", "server_error")

    return Handler


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out and hung up is expected (the adapter retries); anything else is printed.
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class ChatServer:
    """A running server on a background thread; use as a context manager. `base_url` ends in /v1."""

    def __init__(
        self,
        adapter: ModelAdapter,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        served_model: str | None = None,
        interceptor: Interceptor | None = None,
    ) -> None:
        self.app = ChatCompletionsApp(adapter, served_model or str(getattr(adapter, "name", "local")), interceptor)
        self.httpd = _QuietServer((host, port), _handler(self.app))
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host.decode() if isinstance(host, bytes) else host}:{port}/v1"

    def start(self) -> ChatServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="openai-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def load_adapter(spec: str) -> ModelAdapter:
    """A model spec resolved by the project's spec parser (vignette_bench/eval/adapters/spec.py), e.g. tiny:llava?mode=generate."""
    from vignette_bench.eval.adapters.spec import (
        build_adapter,  # late: pulls in torch/transformers only when serving a model
    )

    return build_adapter(spec)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    opt.model(parser, required=True, help="model spec to serve (see docs/openai.md)")
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1: local only)")
    parser.add_argument("--port", type=int, default=8000, help="TCP port (default 8000)")
    parser.add_argument("--served-model-name", default=None, help="name reported in replies (default: the spec)")


def main(args: argparse.Namespace) -> int:
    server = ChatServer(
        load_adapter(args.model), host=args.host, port=args.port, served_model=args.served_model_name or args.model
    )
    print(f"serving {args.model} at {server.base_url} (Ctrl-C to stop)", flush=True)
    try:
        server.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()
    return 0
