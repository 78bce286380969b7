"""VIGNETTE's questions as lmms-eval tasks (`lmms-eval eval --include_path THIS_FOLDER --tasks vignette_identity_contrast`).

lmms-eval loads this file by path (the YAMLs' `!function utils.…`), so `vignette_bench` must be importable in
lmms-eval's environment: `pip install -e /path/to/vignette` there (the Makefile's `lmms-venv` target;
docs/lmms_eval.md). The questions are `vignette run`'s, made by the same code: the pairs come from
`plan_for` (the run's pair config over `vignette.load_dataset`: vignette_bench/eval/runtime/plan.py), `QuestionBuilder` words them and orders their
options with the run seed, and the pair image is the run's composed pair. So with the same source and settings
a doc has the same question id, prompt, image and option order as in `vignette run`.

The settings come from environment variables (lmms-eval passes no arguments to a task's functions), named after
`vignette run`'s options: VIGNETTE_SOURCE (required), VIGNETTE_SAMPLE, VIGNETTE_SEED, VIGNETTE_ORDERS,
VIGNETTE_PARADIGMS (comma-separated), VIGNETTE_VARIANTS (`--variants` values, space-separated), VIGNETTE_FILTERS
(`;`-separated key=value), VIGNETTE_SIZE (WxH). Unset ones take `vignette run`'s defaults.

A chat backend gets the messages `vignette run`'s openai adapter sends (system turn with the choice
instruction, then the image and the prompt); a simple backend gets the image and the prompt. The answer is
read as the openai adapter reads it (an option word for word, or JSON {"choice": option}); anything else is an
invalid answer. Each logged sample carries, under `vignette_response`, the responses-schema row
(`Question.response`) and the run settings and dataset record `vignette run` would write (JSON), which
`vignette import --format lmms-eval` turns into a run folder.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from typing import Any

from vignette_bench.errors import VignetteError
from vignette_bench.eval.adapters.base import CHOICE_SYSTEM_PROMPT, ChoiceResult, match_option
from vignette_bench.eval.runtime.questions import Question, QuestionBuilder
from vignette_bench.formats.run_record import PARADIGMS, RunSettings, Variants

ENV = "VIGNETTE_"  # prefix of the settings' environment variables
MODEL = "lmms-eval"  # the rows' model_id: lmms-eval's model is named in its results file, read on import
_TUPLES = tuple(f.name for f in dataclasses.fields(Question) if str(f.type).startswith("tuple"))
_FIELDS = tuple(f.name for f in dataclasses.fields(Question))


class SettingsError(VignetteError, ValueError):
    """An environment variable that cannot be read as the `vignette run` option it stands for."""


def settings(config: str, env: dict[str, str] | None = None) -> RunSettings:
    """The `vignette run` settings of `config` that the environment names."""
    from vignette_bench.cli_options import parse_size
    from vignette_bench.formats.run_record import parse_filters

    env = dict(os.environ if env is None else env)

    def get(name: str) -> str:
        return env.get(ENV + name, "").strip()

    source = get("SOURCE")
    if not source:
        raise SettingsError(
            f"{ENV}SOURCE is not set: name the VIGNETTE source (a `vignette build` folder, Hub repo or URL), "
            f"e.g. {ENV}SOURCE=/data/vignette lmms-eval eval ... (docs/lmms_eval.md)"
        )
    try:
        fields: dict[str, Any] = {"source": source, "config": config, "model": MODEL}
        if get("SAMPLE"):
            fields["sample"] = int(get("SAMPLE"))
        if get("SEED"):
            fields["seed"] = int(get("SEED"))
        if get("ORDERS"):
            fields["orders"] = get("ORDERS")
        fields["paradigms"] = tuple(p.strip() for p in get("PARADIGMS").split(",") if p.strip()) or PARADIGMS
        if get("VARIANTS"):
            fields["variants"] = Variants.parse(get("VARIANTS").split())
        if get("FILTERS"):
            fields["filters"] = parse_filters([f for f in get("FILTERS").split(";") if f.strip()])
        if get("SIZE"):
            fields["image_size"] = parse_size(get("SIZE"))
        return RunSettings(**fields)
    except Exception as e:  # any unreadable value: name the variables, not a traceback deep in pydantic
        raise SettingsError(f"the {ENV}* settings cannot be read ({type(e).__name__}: {e}); docs/lmms_eval.md") from e


def _pairs(config: str) -> tuple[Any, QuestionBuilder]:
    """The run's pair source and question builder for the settings the environment names now."""
    return _open(json.dumps(settings(config).to_json(), sort_keys=True))


@functools.lru_cache(maxsize=4)
def _open(settings_json: str) -> tuple[Any, QuestionBuilder]:
    """Opened once per settings and process (lmms-eval asks for each doc's image separately)."""
    from vignette_bench.eval.runtime.plan import plan_for

    plan = plan_for(RunSettings.from_json(json.loads(settings_json), "settings"))
    return plan.pairs, plan.builder


def docs(config: str) -> list[dict[str, Any]]:
    """One doc per question `vignette run` would ask, in its plan order: the question's fields, its pair, and
    (as JSON, the same in every doc, so any doc of a log names them) the run settings and what `vignette run`
    records of the dataset (source, selection, index digest), which `vignette import` keeps."""
    run = settings(config)
    source, builder = _pairs(config)
    provenance = {
        "vignette_settings": json.dumps(run.to_json(), sort_keys=True),
        "vignette_dataset": json.dumps({"source": run.source, "config": config, **source.revision}, sort_keys=True),
    }
    out = []
    for index, row in enumerate(source.rows):
        for q in builder(row):
            doc = {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(q).items()}
            out.append({**doc, "pair_index": index, **provenance})
    return out


def _process(config: str, dataset: Any) -> Any:
    """lmms-eval's `process_docs`: the placeholder dataset the YAML loads is replaced by the questions."""
    import datasets

    questions = docs(config)
    if not questions:  # lmms-eval would fail later on an empty dataset with an IndexError
        run = settings(config)
        raise SettingsError(
            f"{config}: no questions with these {ENV}* settings (paradigms {list(run.paradigms)}, variants "
            f"{run.variants.as_dict()}, filters {dict(run.filters)}); e.g. portraits asks stereotype questions only"
        )
    return datasets.Dataset.from_list(questions)


process_identity_contrast = functools.partial(_process, "identity_contrast")
process_activity_contrast = functools.partial(_process, "activity_contrast")
process_identity_activity_contrast = functools.partial(_process, "identity_activity_contrast")
process_portraits = functools.partial(_process, "portraits")


def question(doc: dict[str, Any]) -> Question:
    """The `Question` a doc was made from (lists back to tuples)."""
    fields: dict[str, Any] = {k: tuple(doc[k]) if k in _TUPLES else doc[k] for k in _FIELDS}
    return Question(**fields)


# lmms-eval's openai backend sends the questions in its own order (grouped by prompt prefix), not pair by pair:
# keep enough composed pairs (672x336 RGB: 0.7 MB each) that one is rarely composed twice
@functools.lru_cache(maxsize=64)
def _image(config: str, index: int) -> Any:
    source, _ = _pairs(config)
    return source.compose(source.rows[index])


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    """The composed pair image (none for the text-only form of a question)."""
    return [_image(doc["config"], int(doc["pair_index"]))] if doc["modality"] == "image" else []


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    return str(doc["prompt"])


def doc_to_messages(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> list[dict]:
    """What `vignette run`'s openai adapter sends (`build_messages`): the choice instruction as the system
    turn, then the image (if any) and the prompt in the user turn."""
    content: list[dict[str, Any]] = [{"type": "image", "url": image} for image in doc_to_visual(doc)]
    content.append({"type": "text", "text": doc_to_text(doc)})
    return [
        {"role": "system", "content": [{"type": "text", "text": CHOICE_SYSTEM_PROMPT}]},
        {"role": "user", "content": content},
    ]


def doc_to_target(doc: dict[str, Any]) -> str:
    """The correct option of a factuality question, "" where there is none."""
    return str(doc["answer"] or "")


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, Any]:
    """The answer read as the openai adapter reads it, and the responses-schema row it makes."""
    q = question(doc)
    reply = results[0] if results else ""
    reply = reply if isinstance(reply, str) else str(reply)
    choice = match_option(reply, q.options)
    result = (
        ChoiceResult(q.question_id, choice, reply)
        if choice is not None
        else ChoiceResult(q.question_id, None, reply, valid=False, error="answer is not one of the options")
    )
    row = q.response(result, MODEL)
    # lmms-eval 0.7.3 logs a sample's metrics but not its doc: the provenance travels with the row
    answer = {"row": row, "settings": doc["vignette_settings"], "dataset": doc["vignette_dataset"]}
    return {"vignette_valid": 1.0 if row["valid"] else 0.0, "vignette_response": answer}


def count_answers(answers: list[dict[str, Any]]) -> int:
    """The aggregation of `vignette_response`: how many questions were answered (the rows go to the sample log)."""
    return len(answers)
