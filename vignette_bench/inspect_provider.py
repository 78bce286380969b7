"""`vignette/SPEC`: every `vignette run` model spec as an inspect_ai model provider (docs/inspect.md).

    inspect eval vignette_bench/identity_contrast -T source=SRC --model vignette/random
    inspect eval vignette_bench/portraits -T source=SRC --model "vignette/tiny:llava?mode=score"

What follows `vignette/` is a model spec exactly as `vignette run --model` takes it (vignette_bench/eval/adapters/spec.py):
`random`, `always-left`, `tiny:FAMILY`, `hf:ID`, `openai:MODEL@URL`, `vllm:MODEL`, without commas (inspect
splits `--model` on them). `-M key=value` values are the adapter defaults `vignette run` passes (seed,
batch_size), where the backend takes them; the spec's own options win. inspect finds this provider through the package's `inspect_ai` entry point
(vignette_bench/inspect_registry.py), so the command line needs no task file.

On a VIGNETTE task's sample (its metadata holds the question) the adapter is asked exactly what `vignette
run` asks it: `choose` on the same question id, prompt, options and pair image (decoded from the sample's
lossless PNG), with the run's seed (`run_seed`) as its default seed; the adapter's own verdict (choice,
validity, probabilities, error) travels in the output's metadata, and the task's scorer makes the
responses row from it, so the log imports to the rows `vignette run` writes. Any other task's sample is
answered with free text (`generate_text`) by the backends that produce it.

Token counts are what the adapter does not report: usage is left at zero, and counting text for inspect
never touches tiktoken (whose encoding file is a download, so the command line stays offline).
"""

from __future__ import annotations

import base64
import io
import threading
from typing import Any

import anyio
from inspect_ai._util.error import PrerequisiteError
from inspect_ai.log._samples import sample_active  # inspect's own way to reach the running sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageUser,
    ContentImage,
    ContentText,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    ModelUsage,
    modelapi,
)
from PIL import Image

from vignette_bench.errors import VignetteError
from vignette_bench.eval.adapters.base import ChoiceRequest, ChoiceResult, ModelAdapter, TextRequest
from vignette_bench.inspect_tasks import RESULT_KEY, question_from_metadata  # the verdict's key, read by the scorer

PROVIDER = "vignette"


def result_to_json(result: ChoiceResult) -> dict[str, Any]:
    probabilities = list(result.probabilities) if result.probabilities is not None else None
    return {
        "choice": result.choice,
        "raw": result.raw,
        "probabilities": probabilities,
        "valid": result.valid,
        "error": result.error,
        "extras": dict(result.extras),
    }


def result_from_json(question_id: str, data: dict[str, Any]) -> ChoiceResult:
    probabilities = data.get("probabilities")
    return ChoiceResult(
        question_id,
        data.get("choice"),
        str(data.get("raw") or ""),
        tuple(probabilities) if probabilities is not None else None,
        bool(data.get("valid")),
        data.get("error"),
        dict(data.get("extras") or {}),
    )


def _image(url: str) -> Image.Image:
    """The PIL image of a data URL (the task sends the composed pair as a lossless PNG)."""
    head, _, body = url.partition(",")
    if not head.startswith("data:") or not head.endswith(";base64"):
        raise ValueError(f"{PROVIDER}: images must be base64 data URLs (got {url[:40]!r}…)")
    return Image.open(io.BytesIO(base64.b64decode(body))).convert("RGB")


def _last_user_turn(input: list[ChatMessage]) -> tuple[str, Image.Image | None]:
    """The text and the (first) image of the last user message."""
    for message in reversed(input):
        if isinstance(message, ChatMessageUser):
            if isinstance(message.content, str):
                return message.content, None
            text = "\n".join(c.text for c in message.content if isinstance(c, ContentText))
            images = [c.image for c in message.content if isinstance(c, ContentImage)]
            return text, _image(images[0]) if images else None
    return "", None


@modelapi(name=PROVIDER)
class VignetteModelAPI(ModelAPI):
    """One `vignette run` model spec as an inspect model (`--model vignette/SPEC`)."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),  # noqa: B008 - inspect's own signature
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        from vignette_bench.eval.adapters.spec import parse_spec

        try:
            parse_spec(model_name)  # a bad spec stops the command before any sample runs
        except VignetteError as e:
            raise PrerequisiteError(f"--model {PROVIDER}/{model_name}: {e}") from None
        self.spec = model_name
        self.defaults = dict(model_args)
        self._adapters: dict[int, ModelAdapter] = {}
        self._lock = threading.Lock()  # local models answer one request at a time

    def max_connections(self) -> int:
        return 1  # requests are served one after another anyway (the lock); more only queue

    async def count_text_tokens(self, text: str) -> int:
        # inspect's default loads tiktoken's o200k_base, a download; a whitespace count needs no network
        return max(1, len(text.split()))

    def adapter(self, seed: int) -> ModelAdapter:
        """The spec's adapter for this run seed (the reference responders' answers depend on it), built once."""
        from vignette_bench.eval.adapters.spec import build_adapter

        seed = int(self.defaults.get("seed", seed))
        if seed not in self._adapters:
            defaults = {"batch_size": 1, **self.defaults, "seed": seed}
            try:
                self._adapters[seed] = build_adapter(self.spec, **defaults)
            except VignetteError as e:
                raise PrerequisiteError(f"--model {PROVIDER}/{self.spec}: {e}") from None
        return self._adapters[seed]

    def _answer(
        self, input: list[ChatMessage], config: GenerateConfig, meta: dict[str, Any], sample_id: str
    ) -> ModelOutput:
        prompt, image = _last_user_turn(input)
        with self._lock:
            if "question_id" in meta and "options" in meta:  # a VIGNETTE task's question: what `vignette run` asks
                question = question_from_metadata(meta, prompt)
                adapter = self.adapter(int(meta.get("run_seed", 0)))
                prepare = getattr(adapter, "prepare", None)
                if prepare is not None:
                    prepare([question])
                request = ChoiceRequest(question.question_id, image, prompt, question.options)
                (result,) = adapter.choose([request])
                output = ModelOutput.from_content(model=self.spec, content=result.raw)
                output.metadata = {RESULT_KEY: result_to_json(result)}
            else:  # another task: free text from the backends that write it
                adapter = self.adapter(0)
                max_tokens = config.max_tokens or 128
                text_request = TextRequest(
                    sample_id, image, prompt, max_new_tokens=max_tokens, temperature=config.temperature or 0.0
                )
                try:
                    (reply,) = adapter.generate_text([text_request])
                except TypeError as e:  # the reference responders only pick among a VIGNETTE question's options
                    raise PrerequisiteError(f"--model {PROVIDER}/{self.spec}: {e}") from None
                output = ModelOutput.from_content(model=self.spec, content=reply.text)
                if not reply.valid:
                    output.error = reply.error
        output.usage = ModelUsage()  # not counted (see the module docstring)
        return output

    async def generate(
        self, input: list[ChatMessage], tools: Any, tool_choice: Any, config: GenerateConfig
    ) -> ModelOutput:
        active = sample_active()  # read here: the worker thread below need not see inspect's context
        meta = dict(active.sample.metadata or {}) if active is not None else {}
        sample_id = str(active.sample.id) if active is not None else "sample"
        return await anyio.to_thread.run_sync(self._answer, input, config, meta, sample_id)
