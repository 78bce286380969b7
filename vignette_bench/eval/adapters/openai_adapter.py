"""Any OpenAI-compatible chat-completions server (OpenAI, vLLM serve, TGI, llama.cpp, our test server).

Images travel as PNG data URLs; answers are constrained with `response_format` json_schema where
the server supports it (`structured=False` for servers that reject it); `probe()` checks at start-up
whether the server honours it (a spec runs it before any answer). Transient failures (timeouts,
connection errors, 408/409/429/5xx) are retried with exponential backoff; a request that still fails,
or a reply that is not a usable chat completion, becomes an invalid result that keeps the raw text —
never an answer.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import openai
from PIL import Image

from vignette_bench.eval.adapters.base import (  # noqa: F401 (CHOICE_SYSTEM_PROMPT, match_option: importable from here too)
    CHOICE_SYSTEM_PROMPT,
    BackendUnavailable,
    ChoiceRequest,
    ChoiceResult,
    ModelAdapter,
    TextRequest,
    TextResult,
    image_to_data_url,
    match_option,
)

RETRYABLE_STATUS = frozenset({408, 409, 429})
# The probe's prompt asks for a word outside its options: only a server that enforces the schema answers
# {"choice": "left"|"right"}; one that ignores it answers the prompt (or, untrained, anything).
PROBE_PROMPT = "Reply with the single word: banana."
PROBE_OPTIONS = ("left", "right")


class ProbeFailed(BackendUnavailable):
    """The start-up probe shows that no answer of the run could be valid with this server and spec."""


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff: base * 2**attempt, capped; a server's Retry-After wins when larger (also capped)."""

    max_retries: int = 4
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0

    def delay(self, attempt: int, retry_after_s: float | None = None) -> float:
        backoff = min(self.max_delay_s, self.base_delay_s * (2**attempt))
        if retry_after_s is not None:
            backoff = max(backoff, min(self.max_delay_s, retry_after_s))
        return backoff


@dataclass(frozen=True)
class Reply:
    """One request's outcome after retries: `content` is None when there is no usable answer text."""

    content: str | None
    raw: str
    error: str | None
    attempts: int
    server_model: str | None = None
    finish_reason: str | None = None
    status: int | None = None  # the HTTP status of a failed request (None: no response, or success)


def _url_password(url: str) -> str:
    from urllib.parse import urlsplit

    return urlsplit(url).password or ""


def _basic_credential(url: str) -> str:
    """The Basic-auth value the HTTP client sends for a URL with user:password@ (echoed back, it is a secret)."""
    import base64
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return ""
    return base64.b64encode(f"{unquote(parts.username or '')}:{unquote(parts.password or '')}".encode()).decode()


SYSTEM_PLACEMENTS = ("system", "user", "none")


def redact(text: str | None, secrets: tuple[str, ...]) -> str | None:
    """Remove secrets (the API key, the URL's password, an Authorization value a server echoes: Bearer, Basic,
    token shapes) from text that will be written out (responses `raw`, log parts, errors)."""
    from vignette_bench.redaction import redact_reply

    if not text:
        return text
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[REDACTED]")
    text = re.sub(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{4,}", r"\1[REDACTED]", text)
    return redact_reply(text)


def public_url(url: str) -> str:
    """A base URL without credentials (user:password@) or query string, for provenance and logs."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def build_messages(
    prompt: str, image: Image.Image | None, system: str | None = None, placement: str = "system"
) -> list[dict[str, Any]]:
    """``placement``: "system" sends the system prompt as a system message; "user" folds it into the
    user turn (Llama-3.2-Vision's template refuses images with a system message); "none" drops it."""
    if placement not in SYSTEM_PLACEMENTS:
        raise ValueError(f"system prompt placement must be one of {SYSTEM_PLACEMENTS}, got {placement!r}")
    if system and placement == "user":
        prompt = f"{system}\n\n{prompt}"
    if placement != "system":
        system = None
    return _messages(prompt, image, system)


def _messages(prompt: str, image: Image.Image | None, system: str | None = None) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    if image is not None:
        content.append({"type": "image_url", "image_url": {"url": image_to_data_url(image)}})
    content.append({"type": "text", "text": prompt})
    messages: list[dict[str, Any]] = []
    if system:
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": content})
    return messages


def choice_schema(options: tuple[str, ...]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"choice": {"type": "string", "enum": list(options)}},
        "required": ["choice"],
        "additionalProperties": False,
    }


def _names_probe_option(text: str) -> bool:
    """The reply the schema forces: a JSON object whose "choice" is one of the probe's options."""
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        return False
    return isinstance(parsed, dict) and parsed.get("choice") in PROBE_OPTIONS


def _retry_after_seconds(error: openai.APIStatusError) -> float | None:
    value = error.response.headers.get("retry-after") if error.response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _is_retryable(error: Exception) -> bool:
    if isinstance(error, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(error, openai.APIStatusError):
        return error.status_code in RETRYABLE_STATUS or error.status_code >= 500
    return False


class OpenAIAdapter(ModelAdapter):
    """`choose` and `generate_text` over the chat-completions protocol, `concurrency` requests at a time."""

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        temperature: float = 0.0,
        top_p: float = 1.0,
        structured: bool = True,
        timeout_s: float = 60.0,
        concurrency: int = 4,
        max_retries: int = 4,
        backoff_base_s: float = 1.0,
        backoff_max_s: float = 30.0,
        choice_max_tokens: int = 64,
        max_tokens_param: str = "max_completion_tokens",
        seed: int | None = None,
        system_prompt: str = "system",
        max_consecutive_failures: int = 20,
    ) -> None:
        if system_prompt not in SYSTEM_PLACEMENTS:
            raise ValueError(f"system_prompt must be one of {SYSTEM_PLACEMENTS}, got {system_prompt!r}")
        if max_consecutive_failures < 1:
            raise ValueError(f"max_consecutive_failures must be at least 1, got {max_consecutive_failures}")
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        if max_tokens_param not in ("max_tokens", "max_completion_tokens"):
            raise ValueError(f"max_tokens_param must be max_tokens or max_completion_tokens, got {max_tokens_param!r}")
        self.model = model
        self.name = f"openai:{model}"
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        self.temperature = temperature
        self.top_p = top_p
        self.structured = structured
        self.timeout_s = timeout_s
        self.concurrency = concurrency
        # Flat arguments so a model spec can set them (openai:M@URL?max_retries=8).
        self.retry = RetryPolicy(max_retries, backoff_base_s, backoff_max_s)
        self.choice_max_tokens = choice_max_tokens
        self.max_tokens_param = max_tokens_param
        self.seed = seed
        self.system_prompt = system_prompt
        self.max_consecutive_failures = max_consecutive_failures
        self.probe_result: dict[str, Any] | None = None  # set by probe(); None: not probed
        self._failures = 0  # consecutive connection/auth failures, across threads
        self._failures_lock = threading.Lock()
        key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        self._secrets = tuple(
            x
            for x in (key if key != "EMPTY" else "", _url_password(self.base_url), _basic_credential(self.base_url))
            if x
        )
        # The client's own retries are off: ours record how many attempts each answer took.
        self._client = openai.OpenAI(
            base_url=self.base_url,
            api_key=key,
            max_retries=0,
            timeout=timeout_s,
        )

    # -- protocol -----------------------------------------------------------------------------
    def _complete(
        self,
        messages: list[dict[str, Any]],
        schema: dict[str, Any] | None,
        schema_name: str,
        max_tokens: int,
        temperature: float,
    ) -> Reply:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": temperature,
            "top_p": self.top_p,
            self.max_tokens_param: max_tokens,
        }
        if self.seed is not None:
            kwargs["seed"] = self.seed
        if schema is not None and self.structured:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema_name, "schema": schema, "strict": True},
            }
        last_error = ""
        for attempt in range(self.retry.max_retries + 1):
            try:
                response = self._client.chat.completions.with_raw_response.create(**kwargs)
            except (openai.APIConnectionError, openai.APIStatusError) as error:
                last_error = redact(f"{type(error).__name__}: {error}", self._secrets) or ""
                raw = redact(error.response.text, self._secrets) if isinstance(error, openai.APIStatusError) else ""
                if not _is_retryable(error) or attempt == self.retry.max_retries:
                    self._count_failure(error)
                    status = error.status_code if isinstance(error, openai.APIStatusError) else None
                    return Reply(None, raw or "", last_error, attempt + 1, status=status)
                retry_after = _retry_after_seconds(error) if isinstance(error, openai.APIStatusError) else None
                time.sleep(self.retry.delay(attempt, retry_after))
                continue
            with self._failures_lock:
                self._failures = 0
            reply = self._read(response, attempt + 1)
            return replace(
                reply,
                content=redact(reply.content, self._secrets),
                raw=redact(reply.raw, self._secrets) or "",
                error=redact(reply.error, self._secrets),
            )
        raise AssertionError("unreachable")  # the loop always returns

    def _count_failure(self, error: Exception) -> None:
        """A dead server or a bad key fails every request: stop after N in a row (answers so far are kept)."""
        dead = isinstance(error, openai.APIConnectionError) or (
            isinstance(error, openai.APIStatusError) and error.status_code in (401, 403)
        )
        with self._failures_lock:
            self._failures = self._failures + 1 if dead else 0
            if self._failures >= self.max_consecutive_failures:
                raise BackendUnavailable(
                    f"{public_url(self.base_url)}: {self._failures} requests in a row failed "
                    f"({type(error).__name__}); is the server up and the key right? Answers so far are kept: "
                    "rerun the same command to resume"
                )

    @staticmethod
    def _read(response: Any, attempts: int) -> Reply:
        """A 200 reply that is not a chat completion with text is invalid, raw body kept."""
        body = response.http_response.text
        try:
            completion = response.parse()
            choice = completion.choices[0]
            content = choice.message.content
        except Exception as error:  # noqa: BLE001 — any malformed body is recorded, not raised
            return Reply(None, body, f"malformed reply: {type(error).__name__}: {error}", attempts)
        if content is None:
            return Reply(None, body, "reply has no message content", attempts, completion.model)
        return Reply(content, content, None, attempts, completion.model, choice.finish_reason)

    def _map(self, fn: Any, batch: list[Any]) -> list[Any]:
        if len(batch) <= 1 or self.concurrency == 1:
            return [fn(item) for item in batch]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(batch))) as pool:
            return list(pool.map(fn, batch))  # map keeps batch order

    # -- start-up probe ------------------------------------------------------------------------
    def probe(self) -> dict[str, Any]:
        """One small choice request sent as `choose` sends it (system prompt placement, token limit,
        temperature, seed and, when structured, the json_schema response format); the reply shows what
        the server honours. No usable reply, or a refused response format, raises ProbeFailed: no answer
        of the run could be valid. An ignored schema is a warning on stderr: replies are still read as
        the bare option text, the rest recorded invalid. The result goes into provenance()."""
        reply = self._probe_request(self.structured)
        if reply.content is None:
            raise ProbeFailed(self._probe_failure(reply))
        verdict = "not sent" if not self.structured else "honoured" if _names_probe_option(reply.content) else "ignored"
        if verdict == "ignored":
            print(
                f"warning: {public_url(self.base_url)} ignores response_format (json_schema): asked to answer "
                f"{PROBE_OPTIONS} under the schema, it replied {reply.content[:80]!r}. Answers are not constrained "
                'to the options: each reply is read as {"choice": ...} or the bare option text and anything else '
                "is recorded invalid (vignette run stops when invalid answers pass --max-invalid)",
                file=sys.stderr,
            )
        self.probe_result = {"response_format": verdict, "server_model": reply.server_model}
        return self.probe_result

    def _probe_request(self, structured: bool) -> Reply:
        messages = build_messages(PROBE_PROMPT, None, CHOICE_SYSTEM_PROMPT, self.system_prompt)
        schema = choice_schema(PROBE_OPTIONS) if structured else None
        return self._complete(messages, schema, "choice", self.choice_max_tokens, self.temperature)

    def _probe_failure(self, reply: Reply) -> str:
        where = public_url(self.base_url)
        if self.structured and reply.status in (400, 422) and self._probe_request(False).content is not None:
            return (
                f"{where} refuses the response_format the adapter sends (a json_schema that constrains the answer "
                f"to the options): {reply.error}. Add structured=false to the model spec: replies are then read as "
                "the bare option text and anything else is recorded invalid"
            )
        unreachable = reply.status in (None, 401, 403) and not reply.raw
        hint = (
            "is the server up and are the URL and key right?"
            if unreachable
            else "fix the server or the spec (model name, system_prompt=user|none, max_tokens_param=max_tokens)"
        )
        return (
            f"{where}: the start-up probe (one choice question) got no usable reply after {reply.attempts} "
            f"attempt(s): {reply.error}; body {reply.raw[:300]!r}. Every question would fail the same way: {hint} "
            "(probe=false in the spec skips this check)"
        )

    # -- ModelAdapter -------------------------------------------------------------------------
    def choose(self, batch: list[ChoiceRequest]) -> list[ChoiceResult]:
        return self._map(self._choose_one, batch)

    def _choose_one(self, request: ChoiceRequest) -> ChoiceResult:
        reply = self._complete(
            build_messages(request.prompt, request.image, CHOICE_SYSTEM_PROMPT, self.system_prompt),
            choice_schema(request.options),
            "choice",
            self.choice_max_tokens,
            self.temperature,
        )
        extras = {"attempts": reply.attempts, "server_model": reply.server_model}
        if reply.content is None:
            return ChoiceResult(request.question_id, None, reply.raw, valid=False, error=reply.error, extras=extras)
        choice = match_option(reply.content, request.options)
        if choice is None:
            return ChoiceResult(
                request.question_id,
                None,
                reply.raw,
                valid=False,
                error="answer is not one of the options",
                extras=extras,
            )
        return ChoiceResult(request.question_id, choice, reply.raw, extras=extras)

    def generate_text(self, batch: list[TextRequest]) -> list[TextResult]:
        return self._map(self._generate_one, batch)

    def _generate_one(self, request: TextRequest) -> TextResult:
        reply = self._complete(
            build_messages(request.prompt, request.image),
            request.json_schema,
            "answer",
            request.max_new_tokens,
            request.temperature,
        )
        if reply.content is None:
            return TextResult(request.question_id, reply.raw, valid=False, error=reply.error)
        return TextResult(request.question_id, reply.content)

    def provenance(self) -> dict[str, Any]:
        return {
            "adapter": "openai",
            "model_id": self.model,
            "base_url": public_url(self.base_url),  # never the key, nor credentials in the URL
            "system_prompt": self.system_prompt,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "structured": self.structured,
            "timeout_s": self.timeout_s,
            "concurrency": self.concurrency,
            "retry": {
                "max_retries": self.retry.max_retries,
                "base_delay_s": self.retry.base_delay_s,
                "max_delay_s": self.retry.max_delay_s,
            },
            "choice_max_tokens": self.choice_max_tokens,
            "max_tokens_param": self.max_tokens_param,
            "seed": self.seed,
            "choice_system_prompt": CHOICE_SYSTEM_PROMPT,
            "probe": self.probe_result,  # what the server honoured at start-up; None: not probed
            "versions": {"openai": openai.__version__},
        }


def from_spec(spec: str, parsed: Any, defaults: dict[str, Any]) -> OpenAIAdapter:
    """The backend table's factory for `openai:MODEL@BASE_URL` (vignette_bench/eval/adapters/backends.py); probes the
    server unless the spec says probe=false."""
    from vignette_bench.eval.adapters.spec import construct, invalid

    options = dict(parsed.options)
    probe = options.pop("probe", True)
    if not isinstance(probe, bool):
        raise invalid(spec, f"probe={probe!r}: expected true or false")
    adapter: OpenAIAdapter = construct(spec, OpenAIAdapter, (parsed.target, parsed.at), options, defaults)
    if probe:  # before any answer: a server that cannot serve the run fails here, with what to change
        adapter.probe()
    return adapter
