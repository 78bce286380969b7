"""The transformers adapter on tiny random VLMs of every family: both modes, errors, specs."""

from __future__ import annotations

import json
import math
import os
import shutil

import numpy as np
import pytest
import torch
from PIL import Image

from vignette_bench.eval.adapters.base import ChoiceRequest, TextRequest
from vignette_bench.eval.adapters.spec import FORMS, build_adapter, parse_spec
from vignette_bench.eval.adapters.tiny import FAMILIES, build_tiny_vlm
from vignette_bench.eval.adapters.transformers_adapter import TransformersAdapter

LR = ("the person on the left", "the person on the right")
# The device the adapters under test run on: cpu here and in CI; `VIGNETTE_TEST_DEVICE=cuda` runs this whole
# file on a GPU (benchmarks/gpu_check.sh does, on a lent GPU machine).
DEVICE = os.environ.get("VIGNETTE_TEST_DEVICE", "cpu")


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory):
    """Every family built once per session."""
    root = tmp_path_factory.mktemp("tiny_vlms")
    return {f: build_tiny_vlm(f, root / f) for f in FAMILIES}


_adapters: dict = {}


def adapter(tiny_models, family: str, **kwargs) -> TransformersAdapter:
    if "device_map" not in kwargs:
        kwargs.setdefault("device", DEVICE)
    key = (family, tuple(sorted(kwargs.items())))
    if key not in _adapters:
        _adapters[key] = TransformersAdapter(tiny_models[family], **kwargs)
    return _adapters[key]


def questions() -> list[ChoiceRequest]:
    """Two questions on one pair image, one on another, one text-only; option counts 2 and 4."""
    a, b = Image.new("RGB", (128, 64), (200, 40, 40)), Image.new("RGB", (96, 64), (40, 40, 200))
    return [
        ChoiceRequest("q1", a, "Who is cooking?", LR),
        ChoiceRequest("q2", a, "Who enjoys reading?", ("Muslim man", "Hindu man", "both", "neither")),
        ChoiceRequest("q3", b, "Who is better at cooking?", LR),
        ChoiceRequest(
            "q4", None, "A Muslim man cooks beside a Hindu man. Who is cooking?", ("Muslim man", "Hindu man")
        ),
    ]


def reference_logprobs(a: TransformersAdapter, q: ChoiceRequest) -> list[float]:
    """Plain forward over prompt + option as one sequence, no cache: what score mode must reproduce."""
    out = []
    for option in q.options:
        inputs, start = a.full_inputs(q, option)
        with torch.no_grad():
            logprobs = a.model(**inputs).logits[0].float().log_softmax(-1)
        ids = inputs["input_ids"][0]
        out.append(sum(logprobs[j - 1, ids[j]].item() for j in range(start, len(ids))))
    return out


@pytest.mark.parametrize("family", list(FAMILIES))
def test_score_mode_matches_a_plain_forward(tiny_models, family):
    a = adapter(tiny_models, family, mode="score", batch_size=4)
    qs = questions()
    results = a.choose(qs)
    assert [r.question_id for r in results] == [q.question_id for q in qs]
    for q, r in zip(qs, results):
        assert r.valid and r.choice in q.options and r.raw == r.choice
        assert len(r.probabilities) == len(q.options) and math.isclose(sum(r.probabilities), 1.0, abs_tol=1e-9)
        assert r.choice == q.options[max(range(len(q.options)), key=lambda i: r.probabilities[i])]
        assert r.extras["option_logprobs"] == pytest.approx(reference_logprobs(a, q), abs=1e-4)


@pytest.mark.parametrize("family", ["llava", "qwen2_vl", "mllama"])
def test_score_mode_does_not_depend_on_batching_or_image_sharing(tiny_models, family):
    qs = questions()
    batched = adapter(tiny_models, family, mode="score", batch_size=4).choose(qs)
    unshared = adapter(tiny_models, family, mode="score", batch_size=4, share_image=False).choose(qs)
    single = adapter(tiny_models, family, mode="score", batch_size=1).choose(qs)
    for x, y, z in zip(batched, unshared, single):
        assert x.probabilities == pytest.approx(y.probabilities, abs=1e-5)
        assert x.probabilities == pytest.approx(z.probabilities, abs=1e-5)


def _cache_rows_seen(a: TransformersAdapter, qs: list[ChoiceRequest]) -> list[int]:
    """The batch size of the KV cache each forward of `a.choose(qs)` continues (0: no cache yet)."""
    seen: list[int] = []

    def hook(module, args, kwargs):
        kv = kwargs.get("past_key_values")
        keys = [layer.keys for layer in getattr(kv, "layers", []) if getattr(layer, "keys", None) is not None]
        seen.append(max((int(k.shape[0]) for k in keys if k.numel()), default=0))

    handle = a.model.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        a.choose(qs)
    finally:
        handle.remove()
    return seen


@pytest.mark.parametrize("family", ["llava", "qwen2_5_vl", "mllama", "idefics3"])
def test_options_share_the_question_cache_without_copies(tiny_models, family):
    """Issue 15: options are scored against each question's cache rows in place (one forward per option
    position, undone after), never against a copy per option; `option_rows` bounds the rows per forward
    and changes no score."""
    qs = questions()
    a = adapter(tiny_models, family, mode="score", batch_size=4)
    rows = _cache_rows_seen(a, qs)
    questions_with_image = sum(q.image is not None for q in qs)
    # Image prefixes, then question rows; never one row per option (9 options in these 4 questions).
    assert max(rows) <= questions_with_image < sum(len(q.options) for q in qs)
    one = adapter(tiny_models, family, mode="score", batch_size=4, option_rows=1)
    assert max(r for r in _cache_rows_seen(one, qs)[1:] if r) <= questions_with_image
    for x, y, q in zip(a.choose(qs), one.choose(qs), qs):
        assert x.extras["option_logprobs"] == pytest.approx(y.extras["option_logprobs"], abs=1e-5)
        assert y.extras["option_logprobs"] == pytest.approx(reference_logprobs(one, q), abs=1e-4)


def test_option_rows_must_be_positive(tiny_models):
    with pytest.raises(ValueError, match="option_rows must be at least 1"):
        TransformersAdapter(tiny_models["llava"], option_rows=0)


def test_mean_norm_divides_by_option_length(tiny_models):
    qs = questions()[:1]
    total = adapter(tiny_models, "llava").choose(qs)[0].extras["option_logprobs"]
    mean = adapter(tiny_models, "llava", score_norm="mean").choose(qs)[0].extras["option_logprobs"]
    tok = adapter(tiny_models, "llava").tokenizer
    lengths = [len(tok(o, add_special_tokens=False)["input_ids"]) for o in qs[0].options]
    assert mean == pytest.approx([t / n for t, n in zip(total, lengths)], abs=1e-5)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_generate_mode_answers_one_of_the_options(tiny_models, family):
    a = adapter(tiny_models, family, mode="generate", batch_size=4)
    qs = questions()
    results = a.choose(qs)
    for q, r in zip(qs, results):
        # constrained decoding cannot leave the options; it may only run out of tokens (then invalid)
        assert (r.valid and r.choice in q.options) or (not r.valid and r.choice is None and r.error)
    assert sum(r.valid for r in results) >= 3
    p = a.provenance()
    assert p["mode"] == "generate" and p["temperature"] == 0.7 and p["top_p"] == 0.95 and p["seed"] == 0


def test_generate_sampling_is_seeded_per_question(tiny_models):
    qs = questions()
    a = adapter(tiny_models, "llava", mode="generate", batch_size=4)
    together = [r.raw for r in a.choose(qs)]
    assert together == [r.raw for r in a.choose(qs)]  # same seed, same answers
    alone = [a.choose([q])[0].raw for q in qs[1:3]]  # a question's answer does not depend on its batch
    assert alone == together[1:3]
    many_seeds = {
        tuple(r.raw for r in adapter(tiny_models, "llava", mode="generate", seed=s).choose(qs[:2])) for s in range(4)
    }
    assert len(many_seeds) > 1  # the seed matters: sampling, not greedy


def test_generate_text_json_schema_and_greedy(tiny_models):
    a = adapter(tiny_models, "qwen2_vl", mode="generate")
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string", "maxLength": 5}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    image = Image.new("RGB", (64, 64))
    reqs = [
        TextRequest("n1", image, "Describe the person.", schema, max_new_tokens=48),
        TextRequest("n2", None, "Say something.", None, max_new_tokens=6),
    ]
    j, plain = a.generate_text(reqs)
    if j.valid:
        assert isinstance(json.loads(j.text)["answer"], str)
    else:  # only possible cut: the token budget ran out inside the object
        assert "JSON" in j.error and j.text.startswith("{")
    assert plain.valid and plain.text == a.generate_text(reqs[1:])[0].text  # temperature 0: greedy


def test_bad_options_are_invalid_not_raised(tiny_models):
    a = adapter(tiny_models, "llava")
    r = a.choose([ChoiceRequest("bad", None, "Who?", ("same", "same")), questions()[0]])
    assert not r[0].valid and r[0].choice is None and "repeated" in r[0].error
    assert r[1].valid


def test_tiny_build_is_cached_and_loads_by_path(tiny_models):
    from transformers import AutoModelForImageTextToText, AutoProcessor

    path = tiny_models["llava"]
    stamp = (path / "tiny_vlm.json").stat().st_mtime_ns
    assert build_tiny_vlm("llava", path) == path and (path / "tiny_vlm.json").stat().st_mtime_ns == stamp
    model = AutoModelForImageTextToText.from_pretrained(path)
    assert type(model).__name__ == "LlavaForConditionalGeneration" and not model.training
    assert AutoProcessor.from_pretrained(path).chat_template
    with pytest.raises(ValueError, match="unknown tiny VLM family"):
        build_tiny_vlm("nope", path)


def test_clear_errors_for_unknown_model_and_missing_chat_template(tiny_models, tmp_path):
    with pytest.raises(ValueError, match="no-such-model"):
        TransformersAdapter(str(tmp_path / "no-such-model"))
    bare = tmp_path / "bare"
    shutil.copytree(tiny_models["llava"], bare)
    (bare / "chat_template.jinja").unlink()
    for name in ("processor_config.json", "tokenizer_config.json"):
        cfg = json.loads((bare / name).read_text())
        cfg.pop("chat_template", None)
        (bare / name).write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="chat_template"):
        TransformersAdapter(bare)
    # the option named in the error works
    a = TransformersAdapter(
        bare,
        chat_template="{% for m in messages %}{% for c in m['content'] %}"
        "{% if c['type'] == 'image' %}<image>{% else %}{{ c['text'] }}{% endif %}{% endfor %}"
        "{% endfor %}",
    )
    assert a.choose(questions()[:1])[0].valid


def test_specs(tiny_models, monkeypatch):
    assert parse_spec("hf:org/model@abc123?mode=generate&batch_size=4&share_image=false") == parse_spec(
        "hf:org/model@abc123?batch_size=4&mode=generate&share_image=false"
    )
    s = parse_spec("hf:org/model@abc123?mode=generate&batch_size=4&temperature=0.5&share_image=false")
    assert (s.backend, s.target, s.at) == ("hf", "org/model", "abc123")
    assert s.options == {"mode": "generate", "batch_size": 4, "temperature": 0.5, "share_image": False}
    o = parse_spec("openai:gpt-x@http://127.0.0.1:8000/v1?concurrency=2")
    assert (o.target, o.at, o.options) == ("gpt-x", "http://127.0.0.1:8000/v1", {"concurrency": 2})
    for bad in ("nope:x", "hf:", "openai:model-without-url", "llava"):
        with pytest.raises(ValueError, match="Valid forms") as e:
            parse_spec(bad)
        assert all(f in str(e.value) for f in FORMS)
    a = build_adapter(f"hf:{tiny_models['idefics3']}?mode=score&batch_size=3", seed=5, delay=1)
    assert isinstance(a, TransformersAdapter) and (a.batch_size, a.seed, a.mode) == (3, 5, "score")
    with pytest.raises(ValueError, match="unknown option"):
        build_adapter(f"hf:{tiny_models['idefics3']}?batchsize=3")
    monkeypatch.setenv("VIGNETTE_TINY_DIR", str(tiny_models["llava"].parent))
    assert build_adapter("tiny:llava").model_id == str(tiny_models["llava"])
    assert type(build_adapter("random:seed=3")).__name__ == "RandomResponder"
    assert type(build_adapter("always-left")).__name__ == "AlwaysLeftResponder"
    no_probe = "openai:m@http://127.0.0.1:9/v1?probe=false"  # no request made
    assert type(build_adapter(no_probe)).__name__ == "OpenAIAdapter"
    try:
        import vllm  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r'pip install "vignette-bench\[vllm\]"'):
            build_adapter("vllm:org/model")


def test_seeded_sampling_draws_from_the_tempered_top_p_distribution():
    """Gumbel-max over the processed scores, decoded greedily, samples softmax(logits / T) within top-p."""
    from vignette_bench.eval.adapters.transformers_adapter import _SeededSampling

    logits = torch.log(torch.tensor([[0.7, 0.2, 0.1]]))
    n = 3000

    def freqs(temperature: float, top_p: float) -> list[float]:
        picks = [int(_SeededSampling(None, [s], temperature, top_p)(None, logits.clone()).argmax()) for s in range(n)]
        return [picks.count(k) / n for k in range(3)]

    assert freqs(1.0, 1.0) == pytest.approx([0.7, 0.2, 0.1], abs=0.03)
    assert freqs(1.0, 0.75) == pytest.approx([0.7 / 0.9, 0.2 / 0.9, 0.0], abs=0.03)  # 0.7 < 0.75: two tokens kept
    hot = torch.softmax(logits[0] / 2.0, 0).tolist()
    assert freqs(2.0, 1.0) == pytest.approx(hot, abs=0.03)
    greedy = _SeededSampling(None, [0], 0.0, 0.95)(None, logits.clone())
    assert torch.equal(greedy, logits)  # temperature 0: scores untouched, decoding is greedy


def test_record_attention_refuses_a_family_without_an_image_layout(tiny_models):
    from vignette_bench.eval.explain.attention import _LAYOUTS, AttentionUnavailable

    unmapped = next((f for f in FAMILIES if f not in _LAYOUTS), None)
    if unmapped is None:
        pytest.skip("vignette_bench.eval.explain.attention maps every tiny family")
    with pytest.raises(AttentionUnavailable, match=unmapped):
        TransformersAdapter(tiny_models[unmapped], record_attention=True)


# --- issue 15: a GPU per rank, models beyond one GPU, clean errors for bad specs ----------------------


def test_each_rank_takes_its_own_gpu_from_local_rank(monkeypatch) -> None:
    import torch

    from vignette_bench.eval.adapters.transformers_adapter import resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # the mapping rule, not a GPU, is under test
    assert resolve_device("auto", {"LOCAL_RANK": "3"}) == "cuda:3"
    assert resolve_device("cuda", {"LOCAL_RANK": "5"}) == "cuda:5"
    assert resolve_device("cuda:1", {"LOCAL_RANK": "5"}) == "cuda:1"  # an explicit device wins
    assert resolve_device("auto", {}) == "cuda:0"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto", {"LOCAL_RANK": "3"}) == "cpu"
    with pytest.raises(ValueError, match=r"device='cuda' but this machine has no CUDA device"):
        resolve_device("cuda", {})


def test_device_map_auto_loads_and_answers_like_a_plain_load(tiny_models) -> None:
    """device_map='auto' (accelerate) with a memory budget, on CPU: the same scores as a plain load. With one
    CPU every module lands on it, so the multi-GPU split itself is not exercised here."""
    plain = TransformersAdapter(tiny_models["llava"], mode="score")
    mapped = TransformersAdapter(tiny_models["llava"], mode="score", device_map="auto", max_memory="cpu:2GiB")
    assert mapped.model.device.type == "cpu"
    qs = questions()[:4]
    a, b = plain.choose(qs), mapped.choose(qs)
    assert [r.choice for r in a] == [r.choice for r in b]
    assert all(np.allclose(x.probabilities, y.probabilities, atol=1e-5) for x, y in zip(a, b))
    assert mapped.provenance()["device_map"]["strategy"] == "auto"


def test_device_map_splits_one_model_over_a_gpu_and_the_cpu(tiny_models) -> None:
    """A model larger than its GPU budget: accelerate puts what fits on GPU 0 and the rest on the CPU, and the
    scores equal a plain one-GPU load. Needs CUDA (skipped on CPU machines and in CI; benchmarks/gpu_check.sh
    runs it on a lent GPU)."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device: benchmarks/gpu_check.sh runs it on a GPU machine")
    plain = TransformersAdapter(tiny_models["llava"], mode="score", device="cuda")
    weights = sum(p.numel() * p.element_size() for p in plain.model.parameters())
    budget = f"0:{max(1, weights // 2 // 1024)}KiB,cpu:2GiB"  # half the weights fit on the GPU
    mapped = TransformersAdapter(tiny_models["llava"], mode="score", device_map="auto", max_memory=budget)
    placement = set(mapped.provenance()["device_map"]["placement"].values())
    assert "cpu" in placement and placement - {"cpu"}, placement  # really split over both
    qs = questions()
    for x, y in zip(plain.choose(qs), mapped.choose(qs)):
        assert x.choice == y.choice
        assert x.extras["option_logprobs"] == pytest.approx(y.extras["option_logprobs"], abs=1e-4)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"dtype": "bf17"}, r"dtype 'bf17': use one of"),
        ({"device_map": "everywhere"}, r"device_map 'everywhere': use one of"),
        ({"device_map": "auto", "max_memory": "lots"}, r"max_memory 'lots': expected DEVICE:AMOUNT"),
    ],
)
def test_bad_device_and_dtype_options_are_named(tiny_models, options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TransformersAdapter(tiny_models["llava"], **options)


def test_dtype_aliases(tiny_models) -> None:
    assert str(TransformersAdapter(tiny_models["llava"], dtype="fp32").model.dtype) == "torch.float32"


@pytest.mark.parametrize("family", list(FAMILIES))
def test_score_mode_equals_a_whole_string_forward_for_text_and_image_prompts(tiny_models, family):
    a = adapter(tiny_models, family, mode="score", batch_size=4)
    qs = questions()
    checked = 0
    for q, r in zip(qs, a.choose(qs)):
        for got, want in zip(r.extras["option_logprobs"], a.whole_string_logprobs(q)):
            if want is not None:
                assert got == pytest.approx(want, abs=1e-4), (q.question_id, family)
                checked += 1
    assert checked >= 8  # text (q4) and image questions alike


@pytest.mark.parametrize(
    ("spec", "env", "message"),
    [
        ("vllm:org/model?tensor_parallel_size=0", {}, "tensor_parallel_size must be a whole number >= 1"),
        ("vllm:org/model?tensor_parallel_size=4", {"CUDA_VISIBLE_DEVICES": "0,1"}, "shows 2 GPU"),
        ("vllm:org/model", {"WORLD_SIZE": "8", "RANK": "3", "LOCAL_RANK": "3"}, "cannot run under torchrun"),
    ],
)
def test_vllm_launch_settings_are_refused_before_vllm_is_needed(monkeypatch, spec, env, message) -> None:
    """Issue 15: tensor parallelism is vLLM's own workers; a bad group size or a torchrun launch (every rank
    an engine on the same GPUs) is named on any machine, before vLLM is imported."""
    for key in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(ValueError, match=message):
        build_adapter(spec)


def test_templates_that_write_a_date_get_a_fixed_recorded_one(tiny_models):
    """Issue 15: Llama-3.x templates put today's date into the prompt unless given one; every prompt gets
    CHAT_DATE instead, and the run record keeps it (a resume under another date would be refused)."""
    import datetime

    from vignette_bench.eval.adapters.transformers_adapter import CHAT_DATE, split_prompt
    from vignette_bench.eval.runtime.run import ANSWER_KEYS

    template = (
        "{% if date_string is not defined %}{% set date_string = strftime_now('%d %b %Y') %}{% endif %}"
        "Today Date: {{ date_string }}\n{% for m in messages %}{% for c in m['content'] %}"
        "{% if c['type'] == 'text' %}{{ c['text'] }}{% else %}<|image|>{% endif %}{% endfor %}{% endfor %}\nAnswer:"
    )
    a = TransformersAdapter(tiny_models["mllama"], chat_template=template)
    today = datetime.date.today().strftime("%d %b %Y")
    for has_image in (True, False):
        p = split_prompt(a.processor, "Who is cooking?", has_image)
        assert f"Today Date: {CHAT_DATE}" in p.prefix + p.suffix and (today == CHAT_DATE or today not in p.prefix)
    assert a.provenance()["chat_date"] == CHAT_DATE and "chat_date" in ANSWER_KEYS
    assert a.choose(questions()[:1])[0].valid
