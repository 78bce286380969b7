"""Secrets never reach a file: one function that strips them from a spec, a URL or a command line.

A model spec may carry credentials (``openai:m@http://user:SECRET@host/v1``, ``...?api_key=sk-...``)
and the command line that ran a job repeats them. Everything the project records — run.json's
settings, the session log's spec and argv, entries, judgements — goes through `redact`, which
replaces URL userinfo and the values of secret-looking query parameters and flags with ``***``.
The spec keeps its shape, so a reader still sees which server and model were used.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

MASK = "***"
# Query parameters and --flags whose values are credentials (case-insensitive, - and _ alike).
SECRET_NAMES = ("api_key", "apikey", "key", "token", "access_token", "auth", "password", "passwd", "secret", "sig")
_SECRET = "|".join(n.replace("_", "[-_]") for n in SECRET_NAMES)
# scheme://user:pass@host or scheme://token@host: everything between :// and the last @ before the host.
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#@\s]+)@")
_QUERY = re.compile(rf"(?P<name>[?&;](?:{_SECRET})=)(?P<value>[^&;#\s]*)", re.IGNORECASE)
_FLAG = re.compile(rf"^(?P<name>--?(?:[\w-]*[-_])?(?:{_SECRET})=)(?P<value>.*)$", re.IGNORECASE)
_FLAG_ALONE = re.compile(rf"^--?(?:[\w-]*[-_])?(?:{_SECRET})$", re.IGNORECASE)
# Well-known token shapes anywhere in a value (OpenAI, Anthropic, Hugging Face, GitHub, bearer).
_TOKENS = re.compile(
    r"\b(?:sk-[A-Za-z0-9_-]{8,}|sk-ant-[A-Za-z0-9_-]{8,}|hf_[A-Za-z0-9]{8,}|gh[pousr]_[A-Za-z0-9]{8,})"
)


# An Authorization header's value as a server may echo it back in a reply body or an error: the scheme word
# (Bearer, Basic, Token, ...) kept, the credential masked; the JSON/header spelling "authorization": "..." too.
_AUTH_SCHEME = re.compile(
    r"(?i)\b(?P<scheme>bearer|basic|token|digest|negotiate|apikey|api-key)(?P<sep>\s+|=)"
    r"(?P<value>[A-Za-z0-9._~+/-]{8,}=*)"
)
_AUTH_FIELD = re.compile(r"(?i)(?P<name>\b(?:proxy-)?authorization\b[\"']?\s*[:=]\s*[\"']?)(?P<value>[^\"'\r\n,;}]+)")


def _credential_like(value: str) -> bool:
    """A credential, not a word: a digit, a symbol or base64 padding in it, or mixed case (base64 of user:pass)."""
    return bool(re.search(r"[0-9._~+/=-]", value)) or (value != value.lower() and value != value.capitalize())


def _mask_credential(m: re.Match[str]) -> str:
    return f"{m['scheme']}{m['sep']}{MASK}" if _credential_like(m["value"]) else m[0]


def redact_reply(text: str) -> str:
    """A model's or server's reply as it may be written (responses.parquet `raw`, log parts, errors): what
    `redact` masks, plus Authorization values (Bearer, Basic and other schemes, a header echoed as
    ``authorization: ...``), which a server may echo back from the request."""
    out = _AUTH_FIELD.sub(lambda m: f"{m['name']}{MASK}", text)
    out = _AUTH_SCHEME.sub(_mask_credential, out)
    out = _USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", out)
    out = _QUERY.sub(lambda m: f"{m['name']}{MASK}", out)
    return _TOKENS.sub(MASK, out)


def redact(text: str) -> str:
    """`text` with URL userinfo, secret query values and known token shapes replaced by ***."""
    out = _USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", text)
    out = _QUERY.sub(lambda m: f"{m['name']}{MASK}", out)
    flag = _FLAG.match(out)
    if flag:
        out = f"{flag['name']}{MASK}"
    return _TOKENS.sub(MASK, out)


def redact_argv(argv: Sequence[str]) -> list[str]:
    """A command line with every secret redacted, including the value after ``--api-key`` given apart."""
    out: list[str] = []
    hide_next = False
    for word in argv:
        out.append(MASK if hide_next else redact(word))
        hide_next = bool(_FLAG_ALONE.match(word))
    return out


def contains_secret(text: str) -> bool:
    return redact(text) != text


def redact_json(value: Any) -> Any:
    """A JSON-like value (dicts, lists, strings) with `redact` applied to every string in it, keys included."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(k) if isinstance(k, str) else k: redact_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_json(v) for v in value]
    return value
