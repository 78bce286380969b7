"""Local transformers VLMs behind `ModelAdapter`, in two modes.

* ``score``: the log-likelihood of each option as the continuation of the chat prompt, softmaxed
  over the options. Prompts are split where questions diverge: [chat header + image] is encoded
  once per distinct image (``share_image``), each question's text is appended to a copy of that
  KV cache, and the options are scored as continuations of the question's cache with no copy of it:
  one forward per option position (the first options of all questions, then the second ones, ...),
  each appending to the shared cache and then putting it back (``_scratch_rows``). The image is thus
  encoded once for all its questions, and the cache is held once per question, not once per option.
* ``generate``: outlines 1.x constrains decoding to the options (a ``Literal`` output type). The
  sampling (temperature / top-p, the paper's 0.7 / 0.95) is done per question with its own seed,
  so an answer does not depend on which other questions shared its batch.

`generate_text` answers open questions (news subset), JSON-schema constrained through outlines
when the request has a schema; temperature 0 is greedy.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import os
import zlib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .base import ChoiceRequest, ChoiceResult, ModelAdapter, TextRequest, TextResult

Mode = Literal["score", "generate"]


# ----------------------------------------------------------------------------------- loading


def _image_only_processor_class(base: type) -> type:
    """`base` without its video processor, which needs torchvision.

    Qwen2-VL/2.5-VL/3-VL and InternVL processors always build a video processor, and
    transformers' video processors import torchvision; where torchvision is missing (as here) the
    image path still works once the video slot is dropped from the processor's attribute list
    (``__init__`` keeps ``video_processor=None``).
    """

    class ImageOnly(base):  # type: ignore[misc,valid-type]
        @classmethod
        def get_attributes(cls) -> list[str]:
            return [a for a in super().get_attributes() if a != "video_processor"]

    ImageOnly.__name__ = ImageOnly.__qualname__ = base.__name__  # saves and reloads as the real class
    return ImageOnly


def image_only_processor(model_type: str) -> type | None:
    """The processor class to use for `model_type` when torchvision is missing and its processor
    wants a video processor; None when the stock AutoProcessor path works."""
    import transformers
    from transformers.models.auto import processing_auto
    from transformers.utils import is_torchvision_available

    if is_torchvision_available():
        return None
    name = processing_auto.PROCESSOR_MAPPING_NAMES.get(model_type)
    base = getattr(transformers, name, None) if name else None
    if base is None or "video_processor" not in inspect.signature(base.__init__).parameters:
        return None
    return _image_only_processor_class(base)


DTYPES = {"auto": "auto", "bfloat16": "bfloat16", "bf16": "bfloat16", "float16": "float16", "fp16": "float16",
          "half": "float16", "float32": "float32", "fp32": "float32"}  # fmt: skip
DEVICE_MAPS = ("auto", "balanced", "balanced_low_0", "sequential")


def resolve_device(device: str, env: dict[str, str] | None = None) -> str:
    """The torch device of this process: ``auto`` is ``cuda:$LOCAL_RANK`` when CUDA is there, else cpu; a
    bare ``cuda`` also takes ``LOCAL_RANK``, so under torchrun/accelerate every rank gets its own GPU
    from one spec string. A CUDA device on a machine without CUDA is refused (not a late traceback)."""
    import torch

    env = dict(os.environ) if env is None else env
    rank = int(env.get("LOCAL_RANK", "0") or 0)
    if device == "auto":
        return f"cuda:{rank}" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ValueError(f"device={device!r} but this machine has no CUDA device; use device=cpu or auto")
        if device == "cuda":
            return f"cuda:{rank}"
    return device


def parse_max_memory(text: str | None) -> dict[Any, str] | None:
    """``"0:70GiB,1:70GiB,cpu:200GiB"`` -> {0: "70GiB", 1: "70GiB", "cpu": "200GiB"} (device_map's budget)."""
    if not text:
        return None
    out: dict[Any, str] = {}
    for part in text.split(","):
        name, sep, amount = part.partition(":")
        if not sep or not amount.strip():
            raise ValueError(f"max_memory {text!r}: expected DEVICE:AMOUNT pairs, e.g. 0:70GiB,cpu:200GiB")
        name = name.strip()
        out[int(name) if name.isdigit() else name] = amount.strip()
    return out


def load_model_and_processor(
    model_id_or_path: str,
    revision: str | None = None,
    dtype: str = "auto",
    device: str = "cpu",
    attn_implementation: str | None = None,
    device_map: str | None = None,
    max_memory: str | None = None,
) -> tuple[Any, Any]:
    """AutoModelForImageTextToText + AutoProcessor, with errors that say what to do.

    ``device_map`` (auto | balanced | balanced_low_0 | sequential, with an optional ``max_memory``
    budget) spreads a model larger than one GPU over the visible devices (accelerate); then
    ``device`` is not used and inputs go to the model's first device."""
    import transformers
    from transformers import AutoConfig, AutoModelForImageTextToText, AutoProcessor

    try:
        config = AutoConfig.from_pretrained(model_id_or_path, revision=revision)
    except (OSError, ValueError) as e:
        local = Path(model_id_or_path).exists()
        raise ValueError(
            f"cannot load model {model_id_or_path!r}"
            + (f" (revision {revision})" if revision else "")
            + (
                ": the folder has no readable config.json"
                if local
                else ": no such local folder, and not a Hub model id available offline (HF_HUB_OFFLINE is set in tests; "
                "run `huggingface-cli download ID` first, or pass a local path)"
            )
            + f" — {e}"
        ) from e
    try:
        processor_cls: Any = image_only_processor(config.model_type)
        if processor_cls is not None:
            processor = processor_cls.from_pretrained(model_id_or_path, revision=revision)
        else:
            processor = AutoProcessor.from_pretrained(model_id_or_path, revision=revision)
    except (OSError, ValueError) as e:
        raise ValueError(f"cannot load the processor of {model_id_or_path!r}: {e}") from e
    if not isinstance(processor, transformers.ProcessorMixin):
        raise ValueError(
            f"{model_id_or_path!r} has no multimodal processor (AutoProcessor gave "
            f"{type(processor).__name__}); this adapter needs an image-text-to-text model"
        )
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r}: use one of {sorted(DTYPES)}")
    kwargs: dict[str, Any] = {"revision": revision, "dtype": DTYPES[dtype]}
    if attn_implementation:
        kwargs["attn_implementation"] = attn_implementation
    if device_map is not None:
        if device_map not in DEVICE_MAPS:
            raise ValueError(f"device_map {device_map!r}: use one of {DEVICE_MAPS}")
        kwargs["device_map"] = device_map
        if max_memory:
            kwargs["max_memory"] = parse_max_memory(max_memory)
    else:
        device = resolve_device(device)
    try:
        model = AutoModelForImageTextToText.from_pretrained(model_id_or_path, **kwargs)
    except ValueError as e:
        raise ValueError(
            f"{model_id_or_path!r} ({config.model_type}) is not an image-text-to-text model that "
            f"AutoModelForImageTextToText can load: {e}"
        ) from e
    return (model if device_map is not None else model.to(device)).eval(), processor


def weights_digest(model_id_or_path: str) -> str | None:
    """A cheap fingerprint of local weights: sha256 over each weight file's name, size, mtime and its
    first 64 KiB (a safetensors header lists every tensor's dtype, shape and offsets). It changes when
    a file is replaced or rewritten; an edit that keeps size, mtime and header is not seen (hashing
    whole multi-GB files on every session would cost minutes). None for a Hub id (the commit pins it)."""
    folder = Path(model_id_or_path)
    if not folder.is_dir():
        return None
    h = hashlib.sha256()
    for f in sorted(folder.glob("*")):
        if f.suffix in (".safetensors", ".bin", ".pt", ".pth") and f.is_file():
            st = f.stat()
            h.update(f"{f.name}:{st.st_size}:{st.st_mtime_ns}".encode())
            with open(f, "rb") as fh:
                h.update(fh.read(65536))
    return "local:" + h.hexdigest()[:16]


def chat_template_of(processor: Any) -> str:
    template = getattr(processor, "chat_template", None) or getattr(processor.tokenizer, "chat_template", None)
    if not template:
        raise ValueError(
            f"the processor ({type(processor).__name__}) has no chat template: add chat_template.jinja to the model "
            "folder (or `chat_template` in processor_config.json), or pass chat_template=... to TransformersAdapter"
        )
    return template if isinstance(template, str) else json.dumps(template, sort_keys=True)


# ----------------------------------------------------------------------------------- prompts


@dataclass(frozen=True)
class SplitPrompt:
    """A chat prompt cut where questions on one image start to differ.

    `prefix` (chat header + image placeholder) is encoded by the processor with the image;
    `suffix` (the question text, end of turn, generation prompt) is tokenized as plain text.
    """

    prefix: str
    suffix: str


# Llama-3.x templates write a date into the system header ("Today Date: ..."), today's unless told:
# the prompt would change from day to day. Every prompt gets this fixed date (Llama's own fallback) and
# the run record keeps it.
CHAT_DATE = "26 Jul 2024"


def chat_prompt(processor: Any, prompt: str, has_image: bool) -> str:
    """One user turn (image placeholder first, as the VIGNETTE prompts have it) in the model's chat template."""
    content = ([{"type": "image"}] if has_image else []) + [{"type": "text", "text": prompt}]
    # only a template that reads the variable gets it (transformers takes any other keyword for the processor)
    dated = {"date_string": CHAT_DATE} if "date_string" in chat_template_of(processor) else {}
    return str(
        processor.apply_chat_template(
            [{"role": "user", "content": content}], add_generation_prompt=True, tokenize=False, **dated
        )
    )


def split_prompt(processor: Any, prompt: str, has_image: bool) -> SplitPrompt:
    text = chat_prompt(processor, prompt, has_image)
    cut = text.rfind(prompt)
    if cut < 0:  # the template rewrote the text: nothing to share, the whole prompt is the prefix
        return SplitPrompt(text, "")
    # The prefix is encoded on its own: cut only where the whole string's tokens start with the prefix's,
    # else the model would be scored on tokens it never sees ("USER: " + "An" is [..., 'Ġ', 'An'] apart but
    # [..., 'ĠAn'] whole). Trailing whitespace moves to the suffix; if that does not help, nothing is shared.
    tok = processor.tokenizer
    whole = tok(text, add_special_tokens=False)["input_ids"]
    for c in (cut, len(text[:cut].rstrip())):
        head = tok(text[:c], add_special_tokens=False)["input_ids"]
        if whole[: len(head)] == head:
            return SplitPrompt(text[:c], text[c:])
    return SplitPrompt(text, "")


# ----------------------------------------------------------------------------------- scoring


@dataclass
class _Cache:
    """Rows of decoded context: a KV cache plus what the next forward needs to continue each row."""

    kv: Any
    mask: Any  # (rows, T) 1 on real tokens
    next_pos: Any  # (rows,) rotary position of the next token
    last_logprobs: Any  # (rows, V) log-probs of the token after the last real token
    xmask: Any  # Mllama: (rows, 1, images, tiles) cross-attention row for text after the image; else None


# Layer types whose `update` replaces its tensors (torch.cat) instead of writing into them: for these,
# keeping the old tensor references is enough to undo a forward. Anything else takes the copying path.
_SCRATCH_SAFE_LAYERS = ("DynamicLayer", "DynamicSlidingWindowLayer")


def _scratch_safe(kv: Any) -> bool:
    layers = list(getattr(kv, "layers", None) or [])
    return bool(layers) and all(type(layer).__name__ in _SCRATCH_SAFE_LAYERS for layer in layers)


@contextlib.contextmanager
def _scratch_rows(kv: Any, rows: slice) -> Any:
    """Let forwards append to rows `rows` of `kv`, then put `kv` back exactly as it was.

    A row slice of a layer's tensors is a view, and dynamic layers grow by concatenation into new
    tensors, so no copy of the shared prefix is kept beyond the forward itself: the cache is held once
    per question however many options are scored against it."""
    import torch

    saved = [dict(vars(layer)) for layer in kv.layers]
    for layer in kv.layers:
        for name in ("keys", "values"):
            t = getattr(layer, name, None)
            if torch.is_tensor(t) and t.dim() == 4 and t.numel():
                setattr(layer, name, t[rows])
    try:
        yield kv
    finally:
        for layer, state in zip(kv.layers, saved):
            layer.__dict__.clear()
            layer.__dict__.update(state)


def _seq_seed(seed: int, key: str) -> int:
    return zlib.crc32(f"{seed}:{key}".encode()) & 0x7FFFFFFF


class TransformersAdapter(ModelAdapter):
    """Any `AutoModelForImageTextToText` model with a processor that has a chat template."""

    def __init__(
        self,
        model_id_or_path: str | Path,
        mode: Mode = "score",
        revision: str | None = None,
        dtype: str = "auto",
        device: str = "cpu",
        batch_size: int = 8,
        temperature: float = 0.7,
        top_p: float = 0.95,
        seed: int = 0,
        max_new_tokens: int | None = None,
        share_image: bool = True,
        score_norm: Literal["sum", "mean"] = "sum",
        chat_template: str | None = None,
        record_attention: bool = False,
        attn_implementation: str | None = None,
        device_map: str | None = None,
        max_memory: str | None = None,
        option_rows: int | None = None,
    ) -> None:
        if mode not in ("score", "generate"):
            raise ValueError(f"mode must be 'score' or 'generate', got {mode!r}")
        if score_norm not in ("sum", "mean"):
            raise ValueError(f"score_norm must be 'sum' or 'mean', got {score_norm!r}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if option_rows is not None and option_rows < 1:
            raise ValueError(f"option_rows must be at least 1 (questions per option forward), got {option_rows}")
        if record_attention:
            attn_implementation = "eager"  # fused kernels never materialise attention weights
        self.model_id = str(model_id_or_path)
        self.mode: Mode = mode
        self.revision = revision
        self.dtype = dtype
        self.device = device
        self.batch_size = batch_size
        self.temperature = temperature
        self.top_p = top_p
        self.seed = seed
        self.max_new_tokens = max_new_tokens
        self.share_image = share_image
        self.score_norm = score_norm
        self.option_rows = option_rows
        self.record_attention = record_attention
        self.device_map, self.max_memory = device_map, max_memory
        self.model, self.processor = load_model_and_processor(
            self.model_id, revision, dtype, device, attn_implementation, device_map, max_memory
        )
        self.device = str(self.model.device) if device_map is None else f"device_map={device_map}"
        if chat_template is not None:
            self.processor.chat_template = chat_template
        self.chat_template = chat_template_of(self.processor)
        if record_attention:
            from vignette_bench.eval.adapters import attention

            attention.check_supported(self.model.config)  # refuse an unmapped family before any question
        self.tokenizer = self.processor.tokenizer
        self.model_type = self.model.config.model_type
        # Qwen-VL models place tokens with 3-axis rotary positions (time, height, width) from get_rope_index.
        self._mrope = hasattr(getattr(self.model, "model", None), "get_rope_index")
        self.name = f"hf:{self.model_id}"
        self._outlines_model: Any = None
        self._constraints: dict[Any, Any] = {}

    # -- public API --------------------------------------------------------------------------
    def choose(self, batch: list[ChoiceRequest]) -> list[ChoiceResult]:
        results: list[ChoiceResult] = []
        run = self._score if self.mode == "score" else self._generate_choices
        for start in range(0, len(batch), self.batch_size):
            results.extend(run(batch[start : start + self.batch_size]))
        if self.record_attention:
            results = [self._with_attention(r, q) for r, q in zip(results, batch)]
        return results

    def generate_text(self, batch: list[TextRequest]) -> list[TextResult]:
        out: dict[int, TextResult] = {}
        groups: dict[Any, list[int]] = defaultdict(list)
        for i, r in enumerate(batch):
            key = (
                json.dumps(r.json_schema, sort_keys=True) if r.json_schema else None,
                r.max_new_tokens,
                r.temperature,
                r.image is not None,
            )
            groups[key].append(i)
        for (schema, max_new, temperature, _), idx in groups.items():
            for start in range(0, len(idx), self.batch_size):
                part = idx[start : start + self.batch_size]
                reqs = [batch[i] for i in part]
                texts = self._run_outlines(
                    reqs,
                    constraint_key=("json", schema) if schema else None,
                    max_new_tokens=max_new,
                    temperature=temperature,
                )
                for i, r, text in zip(part, reqs, texts):
                    out[i] = self._text_result(r, text)
        return [out[i] for i in range(len(batch))]

    def provenance(self) -> dict[str, Any]:
        from importlib.metadata import version

        import torch
        import transformers

        return {
            "adapter": "transformers",
            "model_id": self.model_id,
            "revision": self.revision or getattr(self.model.config, "_commit_hash", None),
            "model_class": type(self.model).__name__,
            "processor_class": type(self.processor).__name__,
            "model_type": self.model_type,
            "mode": self.mode,
            "dtype": str(self.model.dtype),
            "device": self.device,
            "device_map": None
            if self.device_map is None
            else {
                "strategy": self.device_map,
                "max_memory": self.max_memory,
                "placement": {k: str(v) for k, v in (getattr(self.model, "hf_device_map", None) or {}).items()},
            },
            "batch_size": self.batch_size,
            "seed": self.seed,
            "temperature": self.temperature if self.mode == "generate" else None,
            "top_p": self.top_p if self.mode == "generate" else None,
            "sampling": (
                "greedy"
                if self.temperature <= 0
                else "per-question seeded Gumbel-max over outlines' "
                "constrained, temperature-scaled, top-p-filtered logits"
            )
            if self.mode == "generate"
            else None,
            "max_new_tokens": self.max_new_tokens,
            "score_norm": self.score_norm if self.mode == "score" else None,
            "share_image": self.share_image,
            "option_rows": self.option_rows if self.mode == "score" else None,
            "chat_template_sha256": hashlib.sha256(self.chat_template.encode()).hexdigest(),
            "chat_date": CHAT_DATE,
            "weights_digest": weights_digest(self.model_id),
            "attn_implementation": getattr(self.model.config, "_attn_implementation", None),
            "versions": {
                "transformers": transformers.__version__,
                "torch": torch.__version__,
                "outlines": version("outlines"),
            },
        }

    # -- score mode --------------------------------------------------------------------------
    def _score(self, batch: list[ChoiceRequest]) -> list[ChoiceResult]:
        import torch

        bad = {i: self._bad_options(r) for i, r in enumerate(batch)}
        good = [i for i, err in bad.items() if err is None]
        scores: dict[int, list[float]] = {}
        if good:
            with torch.inference_mode():
                scores = self._option_logprobs([batch[i] for i in good])
            scores = {good[k]: v for k, v in scores.items()}
        results = []
        for i, r in enumerate(batch):
            if bad[i] is not None:
                results.append(ChoiceResult(r.question_id, None, "", None, valid=False, error=bad[i]))
                continue
            s = torch.tensor(scores[i], dtype=torch.float64)
            probs = torch.softmax(s, 0).tolist()
            best = int(torch.argmax(s))
            results.append(
                ChoiceResult(
                    r.question_id,
                    r.options[best],
                    r.options[best],
                    tuple(probs),
                    extras={"option_logprobs": [float(x) for x in s]},
                )
            )
        return results

    @staticmethod
    def _bad_options(r: ChoiceRequest) -> str | None:
        if len(r.options) < 2:
            return f"question {r.question_id} has {len(r.options)} option(s); need at least 2"
        if any(not o for o in r.options) or len(set(r.options)) != len(r.options):
            return f"question {r.question_id} has empty or repeated options: {list(r.options)}"
        return None

    def _option_logprobs(self, batch: list[ChoiceRequest]) -> dict[int, list[float]]:
        """Per question, the (sum or mean) log-probability of each option's tokens."""
        import torch

        prompts = [split_prompt(self.processor, r.prompt, r.image is not None) for r in batch]
        # Level 1: one row per distinct (image, prefix); questions on one pair image share it.
        group_of: list[int] = []
        groups: dict[Any, int] = {}
        group_reqs: list[int] = []
        for i, (r, p) in enumerate(zip(batch, prompts)):
            key = (id(r.image) if r.image is not None else None, p.prefix) if self.share_image else i
            if key not in groups:
                groups[key] = len(group_reqs)
                group_reqs.append(i)
            group_of.append(groups[key])
        out: dict[int, list[float]] = {}
        # Image and text-only prefixes go through the processor separately (it wants images for all or none).
        for with_image in (True, False):
            g_ids = [g for g, i in enumerate(group_reqs) if (batch[i].image is not None) == with_image]
            if not g_ids:
                continue
            level1 = self._encode_prefixes(
                [batch[group_reqs[g]] for g in g_ids], [prompts[group_reqs[g]] for g in g_ids]
            )
            row_of_group = {g: k for k, g in enumerate(g_ids)}
            q_ids = [i for i in range(len(batch)) if group_of[i] in row_of_group]
            # Level 2: each question's text after its image prefix, tokenized as it is inside the whole string.
            suffix_ids = [self._continuation_ids(prompts[i].prefix, prompts[i].suffix) for i in q_ids]
            level2 = self._extend(level1, torch.tensor([row_of_group[group_of[i]] for i in q_ids]), suffix_ids)
            # Level 3: all options of all questions as continuations, in one forward.
            parents, opt_ids, owners = [], [], []
            for k, i in enumerate(q_ids):
                context = prompts[i].prefix + prompts[i].suffix
                for o in batch[i].options:
                    parents.append(k)
                    opt_ids.append(self._continuation_ids(context, o))
                    owners.append(i)
            first = level2.last_logprobs[torch.tensor(parents)]
            first_lp = first.gather(1, torch.tensor([ids[0] for ids in opt_ids], device=first.device)[:, None])[:, 0]
            level3_lp = self._options_logprobs(level2, parents, opt_ids)
            for i, ids, lp0, lps in zip(owners, opt_ids, first_lp.tolist(), level3_lp):
                total = lp0 + sum(lps)
                out.setdefault(i, []).append(total / len(ids) if self.score_norm == "mean" else total)
        return {k: out[k] for k in range(len(batch))}

    def _options_logprobs(self, cache: _Cache, parents: list[int], opt_ids: list[list[int]]) -> list[list[float]]:
        """log p of each option's tokens after its first, option row r continuing question row parents[r].

        Shared path: one forward per option position over (at most `option_rows`) question rows, each
        on the question's own cache rows and undone afterwards, so no question's cache is copied per
        option. Caches whose layers write in place (static, quantized) take the copying path."""
        import torch

        inputs = [ids[:-1] for ids in opt_ids]  # the last token predicts nothing we need
        targets = [ids[1:] for ids in opt_ids]
        if not _scratch_safe(cache.kv):
            return self._continuation_logprobs(cache, torch.tensor(parents), inputs, targets)
        by_question: dict[int, list[int]] = defaultdict(list)
        for r, q in enumerate(parents):
            by_question[q].append(r)
        n_questions = int(cache.mask.shape[0])
        step = self.option_rows or n_questions
        out: list[list[float]] = [[] for _ in opt_ids]
        for start in range(0, n_questions, step):
            rows = slice(start, min(n_questions, start + step))
            questions = range(rows.start, rows.stop)
            part = _Cache(cache.kv, cache.mask[rows], cache.next_pos[rows], cache.last_logprobs[rows], None)
            if cache.xmask is not None:
                part.xmask = cache.xmask[rows]
            for j in range(max(len(by_question[q]) for q in questions)):
                # the j-th option of each question, -1 where a question has fewer options
                picked = [by_question[q][j] if j < len(by_question[q]) else -1 for q in questions]
                if not any(r >= 0 and targets[r] for r in picked):
                    continue
                with _scratch_rows(cache.kv, rows):
                    lps = self._continuation_logprobs(
                        part,
                        None,
                        [inputs[r] if r >= 0 else [] for r in picked],
                        [targets[r] if r >= 0 else [] for r in picked],
                    )
                for r, lp in zip(picked, lps):
                    if r >= 0:
                        out[r] = lp
        return out

    def _continuation_ids(self, context: str, continuation: str) -> list[int]:
        """The tokens ``continuation`` has at the end of ``context + continuation`` tokenized as ONE string
        (what the model would see), not tokenized apart: BPE may merge across the boundary (``': An'`` is
        ``[':', 'ĠAn']`` in context but ``['An']`` alone). When the whole string's tokens do not start with
        the context's (a merge reaches back into the context), the parts are kept apart as before."""
        ctx = self.tokenizer(context, add_special_tokens=False)["input_ids"]
        full = self.tokenizer(context + continuation, add_special_tokens=False)["input_ids"]
        if full[: len(ctx)] == ctx and len(full) > len(ctx):
            return full[len(ctx) :]
        return self.tokenizer(continuation, add_special_tokens=False)["input_ids"]

    def _to_device(self, enc: Any) -> Any:
        enc = enc.to(self.model.device)
        for key in ("pixel_values",):
            if key in enc and enc[key].is_floating_point():
                enc[key] = enc[key].to(self.model.dtype)
        return enc

    def _encode_prefixes(self, reqs: list[ChoiceRequest], prompts: list[SplitPrompt]) -> _Cache:
        import torch

        self.tokenizer.padding_side = "left"  # every row's next token sits at the same index
        images = [[r.image] for r in reqs] if reqs[0].image is not None else None
        enc = self.processor(text=[p.prefix for p in prompts], images=images, padding=True, return_tensors="pt")
        enc = self._to_device(enc)
        mask = enc["attention_mask"]
        if self._mrope:
            pos = self._mrope_positions(enc)
            next_pos = pos.masked_fill(mask[None] == 0, -1).amax(dim=(0, 2)) + 1
        else:
            pos = (mask.long().cumsum(-1) - 1).clamp(min=0)
            next_pos = mask.long().sum(-1)
        # Only the last position's logits are needed: the whole prefix's would be (rows, T, vocab), more
        # than its KV cache for large-vocabulary models (Qwen: 152k).
        out = self.model(**enc, position_ids=pos, use_cache=True, logits_to_keep=1)
        xmask = enc["cross_attention_mask"][:, -1:] if "cross_attention_mask" in enc else None
        return _Cache(out.past_key_values, mask, next_pos, torch.log_softmax(out.logits[:, -1].float(), -1), xmask)

    def _mrope_positions(self, enc: Any) -> Any:
        import torch

        mask = enc["attention_mask"]
        if "image_grid_thw" not in enc:
            pos = (mask.long().cumsum(-1) - 1).clamp(min=0)
            return pos[None].expand(3, -1, -1)
        pos, _ = self.model.model.get_rope_index(
            enc["input_ids"],
            image_grid_thw=enc["image_grid_thw"],
            attention_mask=mask,
            mm_token_type_ids=enc.get("mm_token_type_ids"),
        )
        return pos.to(torch.long)

    def _forward_rows(self, cache: _Cache, parents: Any, ids: list[list[int]]) -> tuple[_Cache, Any, Any]:
        """Select `parents` rows of the cache (None: all rows, in order, no copy), append `ids`
        (right-padded) and run the model once."""
        import torch

        dev = self.model.device
        if parents is None:
            parents = torch.arange(int(cache.mask.shape[0]))
        else:
            cache.kv.batch_select_indices(parents.to(cache.mask.device))
        parents = parents.to(cache.mask.device)
        n = max(1, max(len(x) for x in ids))
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        new_ids = torch.tensor([x + [pad] * (n - len(x)) for x in ids], device=dev)
        new_mask = torch.tensor([[1] * len(x) + [0] * (n - len(x)) for x in ids], device=dev, dtype=cache.mask.dtype)
        next_pos = cache.next_pos[parents]
        pos = next_pos[:, None] + torch.arange(n, device=dev)[None]
        if self._mrope:
            pos = pos[None].expand(3, -1, -1)
        kwargs: dict[str, Any] = {}
        xmask = None
        if cache.xmask is not None:
            xmask = cache.xmask[parents]
            kwargs["cross_attention_mask"] = xmask.expand(-1, n, -1, -1)
        mask = torch.cat([cache.mask[parents], new_mask], 1)
        out = self.model(
            input_ids=new_ids, attention_mask=mask, position_ids=pos, past_key_values=cache.kv, use_cache=True, **kwargs
        )
        lengths = new_mask.sum(-1).long()
        logprobs = torch.log_softmax(out.logits.float(), -1)
        last = logprobs[torch.arange(len(ids), device=dev), (lengths - 1).clamp(min=0)]
        # A row with no new tokens keeps its parent's next-token distribution.
        last = torch.where((lengths > 0)[:, None], last, cache.last_logprobs[parents])
        return _Cache(out.past_key_values, mask, next_pos + lengths, last, xmask), logprobs, new_mask

    def _extend(self, cache: _Cache, parents: Any, ids: list[list[int]]) -> _Cache:
        return self._forward_rows(cache, parents, ids)[0]

    def _continuation_logprobs(
        self, cache: _Cache, parents: Any, inputs: list[list[int]], targets: list[list[int]]
    ) -> list[list[float]]:
        """log p(targets[r][j] | context, inputs[r][:j+1]) for each row r (`parents` as in `_forward_rows`);
        rows with no target need no forward."""
        import torch

        if not any(targets):
            return [[] for _ in targets]
        _, logprobs, _ = self._forward_rows(cache, parents, inputs)
        n = logprobs.shape[1]
        tgt = torch.tensor([t + [0] * (n - len(t)) for t in targets], device=logprobs.device)
        picked = logprobs.gather(2, tgt[:, :, None])[:, :, 0].tolist()
        return [row[: len(t)] for row, t in zip(picked, targets)]

    # -- teacher-forced full inputs (attention recording, reference checks) --------------------
    def full_inputs(self, request: ChoiceRequest, answer: str) -> tuple[Any, int]:
        """The processor inputs for prompt + `answer` as ONE sequence, tokenized exactly as score mode does.

        Returns (inputs, answer_start): input_ids end with the answer's tokens, which start at answer_start.
        """
        import torch

        p = split_prompt(self.processor, request.prompt, request.image is not None)
        images = [[request.image]] if request.image is not None else None
        enc = self.processor(text=[p.prefix], images=images, return_tensors="pt")
        suffix = self._continuation_ids(p.prefix, p.suffix) if p.suffix else []
        answer_ids = self._continuation_ids(p.prefix + p.suffix, answer)
        extra = torch.tensor([suffix + answer_ids])
        n = extra.shape[1]
        answer_start = enc["input_ids"].shape[1] + len(suffix)
        enc["input_ids"] = torch.cat([enc["input_ids"], extra], 1)
        enc["attention_mask"] = torch.cat([enc["attention_mask"], torch.ones_like(extra)], 1)
        for key in ("mm_token_type_ids", "token_type_ids"):
            if key in enc:
                enc[key] = torch.cat([enc[key], torch.zeros_like(extra)], 1)
        if "cross_attention_mask" in enc:
            last = enc["cross_attention_mask"][:, -1:]
            enc["cross_attention_mask"] = torch.cat([enc["cross_attention_mask"], last.expand(-1, n, -1, -1)], 1)
        return self._to_device(enc), answer_start

    def whole_string_logprobs(self, request: ChoiceRequest) -> list[float | None]:
        """Issue 15's check of score mode, without a cache: the processor tokenizes prompt + option as ONE
        string (no split anywhere) and each option is scored on the tokens after the prompt's own tokens.
        None where BPE merges across the boundary (then no whole-string reference exists)."""
        import torch

        p = split_prompt(self.processor, request.prompt, request.image is not None)
        text = p.prefix + p.suffix
        images = [[request.image]] if request.image is not None else None
        base = self.processor(text=[text], images=images, return_tensors="pt")["input_ids"][0]
        out: list[float | None] = []
        for option in request.options:
            enc = self._to_device(self.processor(text=[text + option], images=images, return_tensors="pt"))
            ids = enc["input_ids"][0]
            if not torch.equal(ids[: len(base)].cpu(), base) or len(ids) == len(base):
                out.append(None)
                continue
            with torch.no_grad():
                logprobs = self.model(**enc).logits[0].float().log_softmax(-1)
            out.append(sum(logprobs[j - 1, ids[j]].item() for j in range(len(base), len(ids))))
        return out

    def _with_attention(self, result: ChoiceResult, request: ChoiceRequest) -> ChoiceResult:
        """Hook for eval.attention: a teacher-forced pass over prompt + chosen answer (see docs/adapters.md)."""
        if result.choice is None or request.image is None:
            return result
        import torch

        from vignette_bench.eval.adapters import attention

        inputs, answer_start = self.full_inputs(request, result.choice)
        layout = attention.image_layout(
            self.model.config, self.processor.image_processor, (request.image.height, request.image.width)
        )
        with torch.inference_mode():
            summary = attention.record_attention(self.model, inputs, answer_start, layout)
        return ChoiceResult(
            result.question_id,
            result.choice,
            result.raw,
            result.probabilities,
            result.valid,
            result.error,
            {**result.extras, **summary.to_record()},
        )

    # -- generate mode -------------------------------------------------------------------------
    def _outlines(self) -> Any:
        if self._outlines_model is None:
            import outlines

            self._outlines_model = outlines.from_transformers(self.model, _nested_images(self.processor))
        return self._outlines_model

    def _constraint(self, key: Any) -> Any:
        """outlines' logits processor for `key` (built once: compiling the index is the expensive part)."""
        if key is None:
            return None
        if key not in self._constraints:
            import outlines
            from outlines.types import JsonSchema

            output_type = JsonSchema(key[1]) if key[0] == "json" else Literal[key[1]]  # type: ignore[valid-type]
            self._constraints[key] = outlines.Generator(self._outlines(), output_type).logits_processor
        return self._constraints[key]

    def _run_outlines(self, reqs: list[Any], constraint_key: Any, max_new_tokens: int, temperature: float) -> list[str]:
        import outlines
        from outlines.inputs import Image as OImage

        model = self._outlines()
        seeds = [_seq_seed(self.seed, r.question_id) for r in reqs]
        sampler = _SeededSampling(self._constraint(constraint_key), seeds, temperature, self.top_p)
        generator = outlines.Generator(model, processor=sampler)
        inputs = []
        for r in reqs:
            text = chat_prompt(self.processor, r.prompt, r.image is not None)
            inputs.append([text, OImage(_with_format(r.image))] if r.image is not None else [text])
        import torch

        # outlines_core masks logits with a torch.compile'd kernel: compiling it costs seconds per process
        # on CPU and gains nothing there, so it runs eagerly on CPU.
        eager = (
            torch._dynamo.config.patch(disable=True) if self.model.device.type == "cpu" else contextlib.nullcontext()
        )
        with torch.inference_mode(), eager:
            return generator.batch(inputs, max_new_tokens=max_new_tokens, do_sample=False)

    def _generate_choices(self, batch: list[ChoiceRequest]) -> list[ChoiceResult]:
        out: dict[int, ChoiceResult] = {}
        groups: dict[Any, list[int]] = defaultdict(list)
        for i, r in enumerate(batch):
            err = self._bad_options(r)
            if err is not None:
                out[i] = ChoiceResult(r.question_id, None, "", None, valid=False, error=err)
            else:
                groups[(tuple(r.options), r.image is not None)].append(i)
        for (options, _), idx in groups.items():
            # Constrained decoding may spell an option in more tokens than its canonical tokenization
            # (one per byte at worst), so the default leaves room for that and the end token.
            max_new = self.max_new_tokens or max(len(o.encode()) for o in options) + 2
            texts = self._run_outlines([batch[i] for i in idx], ("choice", options), max_new, self.temperature)
            for i, text in zip(idx, texts):
                r = batch[i]
                answer = text.strip()
                if answer in r.options:
                    out[i] = ChoiceResult(r.question_id, answer, text)
                else:
                    out[i] = ChoiceResult(
                        r.question_id,
                        None,
                        text,
                        valid=False,
                        error=f"generation stopped before completing an option ({max_new} tokens)",
                    )
        return [out[i] for i in range(len(batch))]

    @staticmethod
    def _text_result(r: TextRequest, text: str) -> TextResult:
        if r.json_schema is None:
            return TextResult(r.question_id, text)
        try:
            json.loads(text)
        except json.JSONDecodeError as e:
            return TextResult(
                r.question_id,
                text,
                valid=False,
                error=f"unfinished or invalid JSON after {r.max_new_tokens} new tokens: {e}",
            )
        return TextResult(r.question_id, text)


def _nested_images(processor: Any) -> Any:
    """A copy of `processor` that regroups a flat image list into one list per prompt.

    outlines passes a batch's images as one flat list; Mllama's processor (and the canonical
    batched format of the others) wants `images[i]` to be the images of prompt i.
    """
    import copy

    base = type(processor)

    class Nested(base):  # type: ignore[misc,valid-type]
        def __call__(self, images: Any = None, text: Any = None, **kwargs: Any) -> Any:
            if images and isinstance(text, list) and not isinstance(images[0], (list, tuple)):
                flat = iter(images)
                images = [[next(flat) for _ in range(t.count(self.image_token))] for t in text]
            return super().__call__(images=images, text=text, **kwargs)

    Nested.__name__ = Nested.__qualname__ = base.__name__
    nested = copy.copy(processor)
    nested.__class__ = Nested
    return nested


def _with_format(image: Any) -> Any:
    """outlines.inputs.Image wants `.format` set (PIL leaves it None on images made in memory)."""
    if getattr(image, "format", None):
        return image
    image = image.copy()
    image.format = "PNG"
    return image


class _SeededSampling:
    """outlines' constraint, then one sample per row drawn with that row's own generator.

    Gumbel-max: argmax(logits / T + Gumbel noise) is a sample of softmax(logits / T); generating
    greedily over these scores therefore samples, and each row's draw depends only on its seed.
    """

    def __init__(self, constraint: Any, seeds: list[int], temperature: float, top_p: float):
        self.constraint, self.seeds, self.temperature, self.top_p = constraint, seeds, temperature, top_p
        self.reset()

    def reset(self) -> None:
        if self.constraint is not None:
            self.constraint.reset()
        self.generators: list[Any] = []  # made on the logits' device at the first step

    def _noise(self, shape: Any, device: Any) -> Any:
        import torch

        if not self.generators:
            self.generators = [torch.Generator(device=device).manual_seed(s) for s in self.seeds]
        return torch.stack([torch.rand(shape[-1], generator=g, device=device) for g in self.generators])

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        if self.constraint is not None:
            scores = self.constraint(input_ids, scores)
        if self.temperature <= 0:
            return scores
        logits = scores.float() / self.temperature
        if self.top_p < 1.0:  # keep the smallest set of tokens whose probability reaches top_p
            sorted_logits, order = logits.sort(dim=-1, descending=True)
            probs = sorted_logits.softmax(-1)
            drop = probs.cumsum(-1) - probs > self.top_p
            logits = logits.scatter(-1, order, sorted_logits.masked_fill(drop, float("-inf")))
        uniform = self._noise(logits.shape, logits.device)
        gumbel = -torch.log(-torch.log(uniform.clamp(1e-20, 1.0 - 1e-7)))
        return logits + gumbel


def from_spec(spec: str, parsed: Any, defaults: dict[str, Any]) -> TransformersAdapter:
    """The backend table's factory for `hf:PATH_OR_ID[@REVISION]` (vignette_bench/eval/adapters/backends.py)."""
    from .spec import construct, with_revision

    adapter: TransformersAdapter = construct(
        spec, TransformersAdapter, (parsed.target,), with_revision(parsed), defaults
    )
    return adapter
