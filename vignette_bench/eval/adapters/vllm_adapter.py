"""vLLM (offline engine) behind `ModelAdapter`, answers constrained through outlines.

vLLM needs a CUDA GPU and is not installed here, so this module is import-guarded and has
never run in this repository's CI: see docs/adapters.md. outlines turns the output type (a
``Literal`` of the options, or a JSON schema) into vLLM's structured-output parameters; the
prompt is the model's own chat template rendered by its transformers processor (the same text
the transformers adapter sends), and the image goes in as ``multi_modal_data``. outlines'
``VLLMOffline.generate`` accepts text-only chats, so the engine is called directly with those
parameters. Each request carries its own seed, so an answer does not depend on its batch.
"""

from __future__ import annotations

import hashlib
import json
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Literal

from .base import ChoiceRequest, ChoiceResult, ModelAdapter, TextRequest, TextResult
from .transformers_adapter import CHAT_DATE, _seq_seed, chat_prompt, chat_template_of

INSTALL_HINT = (
    'the vLLM adapter needs the `vllm` package and a CUDA GPU: `pip install "vignette-bench[vllm]"` on a GPU machine '
    "(it is not in requirements.txt: it cannot install or run on the CPU-only machines this project is tested on)"
)


def check_launch(tensor_parallel_size: int, env: dict[str, str] | None = None) -> None:
    """Refuse settings vLLM cannot honour, before it is imported (so the errors show on any machine).

    vLLM starts its own worker processes, one per GPU of the tensor-parallel group; under torchrun or
    accelerate each rank would start a whole engine on the same GPUs. Data parallelism is one process
    per GPU group instead, each with its own ``--shard i/N`` and ``CUDA_VISIBLE_DEVICES`` (docs/gpu.md)."""
    import os

    env = dict(os.environ) if env is None else env
    if isinstance(tensor_parallel_size, bool) or not isinstance(tensor_parallel_size, int) or tensor_parallel_size < 1:
        raise ValueError(f"tensor_parallel_size must be a whole number >= 1, got {tensor_parallel_size!r}")
    if int(env.get("WORLD_SIZE", "1") or 1) > 1:
        raise ValueError(
            "the vLLM adapter runs its own GPU workers and cannot run under torchrun/accelerate "
            f"(WORLD_SIZE={env['WORLD_SIZE']}); start one `vignette run --shard i/N` per GPU group with "
            "CUDA_VISIBLE_DEVICES set instead (docs/gpu.md), or use an hf: spec under torchrun"
        )
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() and len(visible.split(",")) < tensor_parallel_size:
        raise ValueError(
            f"tensor_parallel_size={tensor_parallel_size} but CUDA_VISIBLE_DEVICES={visible!r} shows "
            f"{len(visible.split(','))} GPU(s); show at least {tensor_parallel_size}"
        )


def _require_vllm() -> Any:
    try:
        import vllm
    except ImportError as e:
        from .backends import MissingDependency

        raise MissingDependency(INSTALL_HINT) from e
    return vllm


class VLLMAdapter(ModelAdapter):
    """Generate mode only: vLLM gives sampled text, not a likelihood per option."""

    def __init__(
        self,
        model: str,
        revision: str | None = None,
        temperature: float = 0.7,
        top_p: float = 0.95,
        seed: int = 0,
        max_new_tokens: int | None = None,
        tensor_parallel_size: int = 1,
        **engine_kwargs: Any,
    ) -> None:
        check_launch(tensor_parallel_size)
        vllm = _require_vllm()
        import outlines
        from transformers import AutoProcessor

        self.model_id, self.revision = model, revision
        self.temperature, self.top_p, self.seed, self.max_new_tokens = temperature, top_p, seed, max_new_tokens
        self.tensor_parallel_size = tensor_parallel_size
        self.engine_kwargs = engine_kwargs
        self.name = f"vllm:{model}"
        self.processor = AutoProcessor.from_pretrained(model, revision=revision)
        self.chat_template = chat_template_of(self.processor)
        self.llm = vllm.LLM(
            model=model, revision=revision, seed=seed, tensor_parallel_size=tensor_parallel_size, **engine_kwargs
        )
        self.outlines_model = outlines.from_vllm_offline(self.llm)

    def _prompt(self, prompt: str, image: Any) -> dict[str, Any]:
        text = chat_prompt(self.processor, prompt, image is not None)
        return {"prompt": text, **({"multi_modal_data": {"image": image}} if image is not None else {})}

    def _params(self, question_id: str, output_type: Any, max_tokens: int, temperature: float) -> Any:
        from vllm.sampling_params import SamplingParams, StructuredOutputsParams

        structured = self.outlines_model.type_adapter.format_output_type(output_type)
        return SamplingParams(
            temperature=temperature,
            top_p=self.top_p if temperature > 0 else 1.0,
            max_tokens=max_tokens,
            seed=_seq_seed(self.seed, question_id),
            structured_outputs=StructuredOutputsParams(**structured) if structured else None,
        )

    def choose(self, batch: list[ChoiceRequest]) -> list[ChoiceResult]:
        prompts = [self._prompt(r.prompt, r.image) for r in batch]
        params = [
            self._params(
                r.question_id,
                Literal[tuple(r.options)],  # type: ignore[valid-type]
                self.max_new_tokens or max(len(o.encode()) for o in r.options) + 2,
                self.temperature,
            )
            for r in batch
        ]
        outputs = self.llm.generate(prompts, sampling_params=params)
        results = []
        for r, out in zip(batch, outputs):
            text = out.outputs[0].text
            answer = text.strip()
            if answer in r.options:
                results.append(ChoiceResult(r.question_id, answer, text))
            else:
                results.append(
                    ChoiceResult(
                        r.question_id, None, text, valid=False, error="generation stopped before completing an option"
                    )
                )
        return results

    def generate_text(self, batch: list[TextRequest]) -> list[TextResult]:
        from outlines.types import JsonSchema

        prompts = [self._prompt(r.prompt, r.image) for r in batch]
        params = [
            self._params(
                r.question_id, JsonSchema(r.json_schema) if r.json_schema else None, r.max_new_tokens, r.temperature
            )
            for r in batch
        ]
        outputs = self.llm.generate(prompts, sampling_params=params)
        results = []
        for r, out in zip(batch, outputs):
            text = out.outputs[0].text
            if r.json_schema is not None:
                try:
                    json.loads(text)
                except json.JSONDecodeError as e:
                    results.append(TextResult(r.question_id, text, valid=False, error=f"invalid JSON: {e}"))
                    continue
            results.append(TextResult(r.question_id, text))
        return results

    def provenance(self) -> dict[str, Any]:
        def v(pkg: str) -> str | None:
            try:
                return version(pkg)
            except PackageNotFoundError:
                return None

        return {
            "adapter": "vllm",
            "model_id": self.model_id,
            "revision": self.revision,
            "mode": "generate",
            "temperature": self.temperature,
            "top_p": self.top_p,
            "seed": self.seed,
            "seeding": "per question: crc32(seed:question_id)",
            "max_new_tokens": self.max_new_tokens,
            "tensor_parallel_size": self.tensor_parallel_size,
            "engine_kwargs": {k: str(x) for k, x in self.engine_kwargs.items()},
            "chat_template_sha256": hashlib.sha256(self.chat_template.encode()).hexdigest(),
            "chat_date": CHAT_DATE,
            "versions": {p: v(p) for p in ("vllm", "outlines", "transformers", "torch")},
        }


def from_spec(spec: str, parsed: Any, defaults: dict[str, Any]) -> VLLMAdapter:
    """The backend table's factory for `vllm:MODEL[@REVISION]` (vignette_bench/eval/adapters/backends.py)."""
    from .spec import construct, with_revision

    adapter: VLLMAdapter = construct(spec, VLLMAdapter, (parsed.target,), with_revision(parsed), defaults)
    return adapter
