"""VIGNETTE as an inspect_ai task (the `inspect` extra: `pip install "vignette-bench[inspect]"`; docs/inspect.md).

    inspect eval vignette_bench/identity_contrast -T source=SOURCE -T sample=20 --model openai/gpt-4o
    inspect eval vignette_bench/portraits -T source=SOURCE --model vignette/random   # any `vignette run` spec

(the package's `inspect_ai` entry point registers both tasks and the `vignette/SPEC` models:
vignette_bench/inspect_registry.py)

The questions are `vignette run`'s: the pairs come from `vignette.load_dataset` with the run's pair config
(`plan_for` in vignette_bench/eval/runtime/plan.py), and `QuestionBuilder` words them and orders their options
with the same seed, so a question has the same id, prompt and option order as in a `vignette run` with the same
source, config, sample, seed, orders, filters, paradigms and variants. Each sample is one question: the
composed pair image (a PNG data URL, as the openai adapter sends it) and the prompt text, after the system turn
the openai adapter sends. The scorer accepts an answer only if it is one of the options (or JSON
``{"choice": option}``), as the openai adapter does; anything else is an invalid answer, never counted.

Every sample's metadata holds the whole question (`QUESTION_FIELDS`: question_id, pair_id, identities and
activities left/right, render keys, options in shown order with their identities and sides, paradigm, subtask,
context, config, the option seed, ...) plus `run_seed`; the score's metadata holds the parsed answer and the
responses-schema row (docs/FORMATS.md) `Question.response` makes of it, so a log turns into the responses of a
run folder without asking the taxonomy again. The task's metadata holds the run settings and `template_hash`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

try:
    from inspect_ai import Task, task
    from inspect_ai._util.error import PrerequisiteError
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import ChatMessageUser, ContentImage, ContentText
    from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
    from inspect_ai.solver import Solver, TaskState, generate, system_message
except ModuleNotFoundError as error:  # a core install: name the extra, not a traceback
    from vignette_bench.errors import MissingExtra

    raise MissingExtra.for_module(error.name or "inspect_ai", "vignette_bench/inspect_tasks.py") from error

from vignette_bench.errors import VignetteError
from vignette_bench.eval.adapters.base import CHOICE_SYSTEM_PROMPT, ChoiceResult, image_to_data_url, match_option
from vignette_bench.eval.runtime.questions import Question, Variants, template_hash
from vignette_bench.formats.run_record import ORDERS, PARADIGMS, RunSettings

# The Question fields a sample's metadata carries (all but the prompt, which is the sample's input).
QUESTION_FIELDS = tuple(f.name for f in dataclasses.fields(Question) if f.name != "prompt")
_TUPLES = {f.name for f in dataclasses.fields(Question) if str(f.type).startswith("tuple")}
RESULT_KEY = "vignette_result"  # the vignette/SPEC provider's verdict in ModelOutput.metadata (inspect_provider.py)
INSPECT_MODEL = "inspect"  # the RunSettings.model of a task: inspect names the model (`--model`), not a spec


def question_from_metadata(metadata: dict[str, Any], prompt: str = "") -> Question:
    """The `Question` a sample was made from (its metadata as written to a log: lists back to tuples)."""
    fields: dict[str, Any] = {k: tuple(metadata[k]) if k in _TUPLES else metadata[k] for k in QUESTION_FIELDS}
    return Question(prompt=prompt, **fields)


def _settings(
    config: str,
    source: str,
    sample: int | None,
    seed: int,
    orders: str,
    paradigms: str | Sequence[str] | None,
    variants: str | Sequence[str] | None,
    filters: str | Sequence[str] | None,
    size: str,
) -> RunSettings:
    from vignette_bench.cli_options import parse_size
    from vignette_bench.formats.run_record import parse_filters

    def words(value: str | Sequence[str] | None, sep: str) -> list[str]:
        if value is None:
            return []
        items = value.split(sep) if isinstance(value, str) else list(value)
        return [v.strip() for v in items if v.strip()]

    return RunSettings(
        source=source,
        config=config,
        model=INSPECT_MODEL,
        seed=int(seed),
        paradigms=tuple(words(paradigms, ",")) or PARADIGMS,
        variants=Variants.parse(words(variants, " ")) if variants else Variants(),
        sample=int(sample) if sample is not None else None,
        filters=parse_filters(words(filters, ";")),
        image_size=parse_size(size),
        orders=orders,
    )


def vignette_samples(settings: RunSettings) -> tuple[list[Sample], dict[str, Any]]:
    """One inspect Sample per question `vignette run` would ask with these settings, in its plan order, and
    the task metadata (settings, template hash, the dataset's revision)."""
    from vignette_bench.eval.runtime.plan import plan_for, source_placeholder

    plan = plan_for(settings)
    source = plan.pairs
    samples: list[Sample] = []
    for row, questions in plan.questions():
        image_url = image_to_data_url(source.compose(row)) if any(q.modality == "image" for q in questions) else ""
        for q in questions:
            text = ContentText(text=q.prompt)
            content: list[Any] = [ContentImage(image=image_url), text] if q.modality == "image" else [text]
            meta = {k: getattr(q, k) for k in QUESTION_FIELDS}
            samples.append(
                Sample(
                    id=q.question_id,
                    input=[ChatMessageUser(content=content)],
                    choices=list(q.options),
                    target=q.answer,
                    metadata={
                        **{k: list(v) if isinstance(v, tuple) else v for k, v in meta.items()},
                        "run_seed": settings.seed,
                    },
                )
            )
    task_metadata = {
        "vignette_settings": settings.to_json(),
        "template_hash": template_hash(plan.taxonomy),
        # what `vignette run` records of the source, and whether its renders are drawn placeholders
        "dataset": {
            "source": settings.source,
            "config": settings.config,
            **source.revision,
            "placeholder": source_placeholder(settings.source),
        },
    }
    return samples, task_metadata


def parse_answer(
    completion: str, metadata: dict[str, Any], model: str, verdict: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The answer to one sample: the option it names (or invalid) and the responses-schema row it makes.
    `verdict`: the `vignette/SPEC` provider's own result (inspect_provider.py), taken as `vignette run` takes it."""
    question = question_from_metadata(metadata)
    if verdict is not None:
        from vignette_bench.inspect_provider import result_from_json

        result = result_from_json(question.question_id, verdict)
    elif (choice := match_option(completion, question.options)) is not None:
        result = ChoiceResult(question.question_id, choice, completion)
    else:
        result = ChoiceResult(
            question.question_id, None, completion, valid=False, error="answer is not one of the options"
        )
    row = question.response(result, model)
    return {k: row[k] for k in ("choice", "valid", "error", "chose_left", "selected_identity", "correct")} | {
        "response": {k: v for k, v in row.items() if k != "raw"}  # raw is the log's own output
    }


@metric
def valid_share() -> Metric:
    """The share of answers that named one of the options."""

    def compute(scores: list[SampleScore]) -> float:
        return sum(bool((s.score.metadata or {}).get("valid")) for s in scores) / max(len(scores), 1)

    return compute


@metric
def left_share() -> Metric:
    """Of the valid answers that name a person (or a person's activity) by side, the share naming the left one
    (raw: not side-balanced; `vignette report` on the imported run balances it)."""

    def compute(scores: list[SampleScore]) -> float:
        sided = [m["chose_left"] for s in scores if (m := s.score.metadata or {}).get("chose_left") is not None]
        return sum(sided) / len(sided) if sided else float("nan")

    return compute


@scorer(metrics=[valid_share(), left_share()])
def vignette_choice() -> Scorer:
    """Parses the answer into one of the sample's options (value 1: valid, 0: not); the metadata keeps the
    choice, its side and identity, factual correctness and the responses-schema row."""

    async def score(state: TaskState, target: Target) -> Score:
        verdict = (state.output.metadata or {}).get(RESULT_KEY)
        parsed = parse_answer(state.output.completion, state.metadata, str(state.model), verdict)
        return Score(
            value=1.0 if parsed["valid"] else 0.0,
            answer=parsed["choice"] or "",
            explanation=parsed["error"] or None,
            metadata=parsed,
        )

    return score


def vignette_task(
    config: str,
    source: str,
    sample: int | None = None,
    seed: int = 0,
    orders: str = ORDERS[0],
    paradigms: str | Sequence[str] | None = None,
    variants: str | Sequence[str] | None = None,
    filters: str | Sequence[str] | None = None,
    size: str = "672x336",
    system_prompt: bool = True,
) -> Task:
    """The task for one pair config; the arguments are `vignette run`'s options of the same names
    (`variants`: "paraphrase=0,1 modality=image,text"; `filters`: "dimensions=religion;gender=female")."""
    try:
        settings = _settings(config, source, sample, seed, orders, paradigms, variants, filters, size)
        samples, metadata = vignette_samples(settings)
    except VignetteError as e:  # bad -T arguments or source: inspect prints this one line (exit status 1)
        raise PrerequisiteError(f"{config}: {e}") from None
    solver: list[Solver] = [system_message(CHOICE_SYSTEM_PROMPT)] if system_prompt else []
    return Task(
        dataset=MemoryDataset(samples, name=f"vignette/{config}", location=source),
        solver=[*solver, generate()],
        scorer=vignette_choice(),
        metadata=metadata,
        name=config,
    )


@task
def identity_contrast(
    source: str,
    sample: int | None = None,
    seed: int = 0,
    orders: str = ORDERS[0],
    paradigms: str | None = None,
    variants: str | None = None,
    filters: str | None = None,
    size: str = "672x336",
    system_prompt: bool = True,
) -> Task:
    """Two people of two identities doing one activity: factuality, perception and decision-making questions."""
    return vignette_task(
        "identity_contrast", source, sample, seed, orders, paradigms, variants, filters, size, system_prompt
    )


@task
def portraits(
    source: str,
    sample: int | None = None,
    seed: int = 0,
    orders: str = ORDERS[0],
    paradigms: str | None = None,
    variants: str | None = None,
    filters: str | None = None,
    size: str = "672x336",
    system_prompt: bool = True,
) -> Task:
    """Two portraits of two identities: which of the two is (trait term), the stereotype questions."""
    return vignette_task("portraits", source, sample, seed, orders, paradigms, variants, filters, size, system_prompt)
