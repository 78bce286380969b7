"""The leaderboard protocol: one versioned question plan per config, rebuilt from the source.

Entries are comparable only when they answer the same questions. The protocol fixes everything that
decides which questions a run asks (config, pair sample and its seed, side orders, question seed,
paradigms, wording variants, filters, image size); the model and its answer mode are the entry's
own (shown beside its numbers). ``expected_question_ids`` rebuilds the plan from the source with the
runner's own plan (``plan_for``: vignette_bench/eval/runtime/plan.py), so `validate` can demand exactly that set:
a subset (cherry-picking), extra questions or another seed are not the protocol. Runs with other
settings are "custom": validated and listed apart, never ranked with protocol entries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vignette_bench.eval.runtime.questions import PARADIGMS, Variants
from vignette_bench.formats.run_record import RunSettings

VERSION = "vignette-protocol/1"
CUSTOM = "custom"
MAX_PAIRS = 2000  # per config; a source with fewer pairs is asked in full


@dataclass(frozen=True)
class ConfigPlan:
    config: str
    sample: int | None  # pairs; None: every pair (small sources)
    seed: int = 0
    orders: str = "balanced"
    paradigms: tuple[str, ...] = PARADIGMS
    variants: Variants = Variants()
    image_size: tuple[int, int] = (672, 336)


CONFIGS = ("identity_contrast", "portraits")


def plan_for(config: str, n_pairs: int) -> ConfigPlan:
    """The protocol's plan for a config on a source with ``n_pairs`` pairs in it."""
    if config not in CONFIGS:
        raise KeyError(f"config {config!r} is not in {VERSION} (configs {list(CONFIGS)})")
    return ConfigPlan(config, MAX_PAIRS if n_pairs > MAX_PAIRS else None)


def _comparable(settings: dict[str, Any]) -> dict[str, Any]:
    keys = ("config", "sample", "seed", "orders", "paradigms", "variants", "filters", "image_size")
    return {k: settings.get(k) for k in keys}


def protocol_settings(plan: ConfigPlan, source: str, model: str) -> RunSettings:
    return RunSettings(
        source=source,
        config=plan.config,
        model=model,
        seed=plan.seed,
        paradigms=plan.paradigms,
        variants=plan.variants,
        sample=plan.sample,
        orders=plan.orders,
        image_size=plan.image_size,
    )


def differences(settings: dict[str, Any], plan: ConfigPlan) -> list[str]:
    """How a run's settings (RunSettings.as_dict) differ from the protocol's plan; [] = the protocol."""
    want = _comparable(protocol_settings(plan, "", "").as_dict())
    got = _comparable(settings)
    return [f"{k} {got[k]!r} (protocol: {want[k]!r})" for k in want if got[k] != want[k]]


def source_pairs(source: str, config: str) -> int:
    import vignette

    return len(vignette.load_dataset(source, config))  # metadata only: nothing is composed


# What a responses row says about its question (not its answer): all of it follows from the run settings
# and the source, so `validate` compares each with the rebuilt plan (options in their order: the seed shows there).
PLAN_COLUMNS = (
    "pair_id",
    "config",
    "gender",
    "dimension",
    "paradigm",
    "subtask",
    "template_id",
    "paraphrase",
    "option_style",
    "modality",
    "context",
    "identity_left",
    "identity_right",
    "activity_left",
    "activity_right",
    "key_left",
    "key_right",
    "options",
    "option_identities",
    "candidates",
)


@dataclass(frozen=True)
class Plan:
    """The questions a run with some settings asks, rebuilt with the runner's code, and its wording's hash."""

    questions: dict[str, Any]  # question id -> runtime.questions.Question
    template_hash: str


def planned_questions(settings: RunSettings) -> Plan:
    """Every question a run with these settings asks, rebuilt with the runner's code (no model, no image)."""
    from vignette_bench.eval.runtime.plan import plan_for
    from vignette_bench.eval.runtime.questions import template_hash

    plan = plan_for(settings)
    questions = {q.question_id: q for _, asked in plan.questions() for q in asked}  # plan rows carry no image
    return Plan(questions, template_hash(plan.taxonomy))


def expected_question_ids(settings: RunSettings) -> set[str]:
    """Every question id a run with these settings asks, rebuilt with the runner's code (no model)."""
    return set(planned_questions(settings).questions)


def _norm(value: Any) -> Any:
    if isinstance(value, (list, tuple)) or hasattr(value, "tolist"):
        value = value.tolist() if hasattr(value, "tolist") else value
        return tuple(str(v) for v in value) if isinstance(value, (list, tuple)) else value
    return value


def plan_differences(frame: Any, plan: Plan) -> list[tuple[str, str, Any, Any]]:
    """(column, question id, the responses' value, the plan's) for every answered question whose row differs
    from the rebuilt plan's question, in the responses' order; questions the plan lacks are the caller's."""
    out = []
    columns = [c for c in PLAN_COLUMNS if c in frame.columns]
    for record in frame[["question_id", *columns]].itertuples(index=False, name=None):
        q = plan.questions.get(record[0])
        if q is None:
            continue
        for column, got in zip(columns, record[1:]):
            want, have = _norm(getattr(q, column)), _norm(got)
            if have != want:
                out.append((column, record[0], have, want))
    return out


def _outcome(q: Any, choice: Any, valid: Any) -> dict[str, Any]:
    """selected_identity, chose_left and correct as the runner derives them (questions.py `Question.response`)
    from the planned question and the recorded choice: the plan, not the file, says what an option stands for."""
    ok = bool(valid) and isinstance(choice, str) and choice in q.options
    idx = q.options.index(choice) if ok else None
    side = q.option_sides[idx] if idx is not None else ""
    return {
        "selected_identity": q.option_identities[idx] if idx is not None else "",
        "chose_left": None if not side else side == "left",
        "correct": None if not q.answer or not ok else choice == q.answer,
    }


def _cell(value: Any) -> Any:
    """A derived cell as compared: null, NaN and pandas' NA alike; numpy bools as bools."""
    if value is None or (isinstance(value, float) and value != value) or type(value).__name__ == "NAType":
        return None
    return bool(value) if type(value).__name__ in ("bool", "bool_") else value


def derived_differences(frame: Any, plan: Plan) -> list[tuple[str, str, Any, Any]]:
    """(column, question id, the responses' value, the plan's) for every derived column (selected_identity,
    chose_left, correct) that does not follow from the plan and the recorded choice."""
    out = []
    columns = ["selected_identity", "chose_left", "correct"]
    for qid, choice, valid, *have in frame[["question_id", "choice", "valid", *columns]].itertuples(
        index=False, name=None
    ):
        q = plan.questions.get(qid)
        if q is None:
            continue
        want = _outcome(q, choice, valid)
        for column, got in zip(columns, have):
            got = _cell(got)
            if column == "selected_identity" and got is None:
                got = ""
            if got != want[column]:
                out.append((column, qid, got, want[column]))
    return out


def classify(settings: dict[str, Any], source: str) -> tuple[str, list[str]]:
    """(VERSION, []) when the run followed the protocol, else (CUSTOM, the differences)."""
    config = settings.get("config")
    if config not in CONFIGS:
        return CUSTOM, [f"config {config!r} is not in {VERSION}"]
    try:
        plan = plan_for(str(config), source_pairs(source, str(config)))
    except Exception as e:  # an unreachable or broken source: the run cannot be checked against the protocol
        return CUSTOM, [f"source {source!r} could not be read to rebuild the plan ({e})"]
    diff = differences(settings, plan)
    return (CUSTOM, diff) if diff else (VERSION, [])
