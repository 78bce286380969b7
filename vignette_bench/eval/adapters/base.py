"""The one small interface every model backend implements (see docs/FORMATS.md)."""

from __future__ import annotations

import abc
import base64
import io
import json
import re
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from vignette_bench.errors import VignetteError

# What a chat backend is told besides the question (the openai adapter's system turn; the inspect_ai task's too).
CHOICE_SYSTEM_PROMPT = "Answer with exactly one of the options given, copied word for word."


def image_to_data_url(image: Image.Image) -> str:
    # PNG is lossless: the server sees exactly the pixels the local adapters see.
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def match_option(text: str, options: tuple[str, ...]) -> str | None:
    """The option a reply names: JSON {"choice": ...} or the bare option text (case and a final period ignored)."""
    candidate: Any = text
    try:
        parsed = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        parsed = None
    if isinstance(parsed, dict) and "choice" in parsed:
        candidate = parsed["choice"]
    if not isinstance(candidate, str):
        return None
    normalised = candidate.strip().rstrip(".").strip().casefold()
    for option in options:
        if option.strip().rstrip(".").strip().casefold() == normalised:
            return option
    return None


@dataclass(frozen=True)
class ChoiceRequest:
    """A multiple-choice question; image is None for the text-only form."""

    question_id: str
    image: Image.Image | None
    prompt: str
    options: tuple[str, ...]


@dataclass(frozen=True)
class ChoiceResult:
    question_id: str
    choice: str | None  # one of the request's options, or None when invalid/refused
    raw: str  # what the backend returned, kept verbatim
    probabilities: tuple[float, ...] | None = None  # one per option, in request order
    valid: bool = True
    error: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TextRequest:
    """An open-ended question (news subset, judge prompts)."""

    question_id: str
    image: Image.Image | None
    prompt: str
    json_schema: dict[str, Any] | None = None
    max_new_tokens: int = 128
    temperature: float = 0.0


@dataclass(frozen=True)
class TextResult:
    question_id: str
    text: str
    valid: bool = True
    error: str | None = None


class ModelAdapter(abc.ABC):
    """Batch in, answers out. Subclasses never raise for one bad answer: they mark it invalid."""

    name: str = "adapter"

    @abc.abstractmethod
    def choose(self, batch: list[ChoiceRequest]) -> list[ChoiceResult]:
        """Answer each question with one of its options (same order as the batch)."""

    def generate_text(self, batch: list[TextRequest]) -> list[TextResult]:
        raise TypeError(f"{type(self).__name__} does not produce free text; use a VLM or API adapter")

    @abc.abstractmethod
    def provenance(self) -> dict[str, Any]:
        """Everything needed to reproduce the answers: model id, revision, settings, versions."""


# The error an API adapter records when the server gave no answer at all (the openai client's exception
# classes: connection refused, timeout, 401/403, 404, 429, 5xx): the model was never asked, so a resumed
# run asks again without --retry-invalid.
_BACKEND_FAILURE = re.compile(
    r"^(?:API\w*Error|AuthenticationError|PermissionDeniedError|NotFoundError|ConflictError|RateLimitError|"
    r"InternalServerError|UnprocessableEntityError|BadRequestError)\b"
)


def is_backend_failure(error: str | None) -> bool:
    """Whether a recorded `error` says the backend never answered (rather than the model answering badly)."""
    return bool(error) and bool(_BACKEND_FAILURE.match(error or ""))


class BackendUnavailable(VignetteError, RuntimeError):
    """A backend failed too many requests in a row (server down, bad key): stop the run; answers so far are kept."""
