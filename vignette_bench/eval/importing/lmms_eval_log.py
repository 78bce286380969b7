"""Answers from lmms-eval's `--log_samples` output of the VIGNETTE tasks (vignette_bench/lmms_eval_tasks) as
responses rows.

lmms-eval writes `<output_path>/<model>/<date>_samples_<task>.jsonl` (one line per question) beside
`<date>_results.json`. Each line of a VIGNETTE task carries under `vignette_response` the responses-schema row
(`row`), made by `Question.response` inside the task (the same code `vignette run` uses), and the run's
`settings` and `dataset` record as JSON; so nothing is re-derived here. The model is named in the results file (`config.model`, and the `model`,
`model_version` or `pretrained` of `config.model_args`) unless `--model` names it. A line of another task, or a
file that is not JSON lines, is named as a problem.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vignette_bench.eval.importing.core import Answers, Problems

SUFFIXES = (".jsonl",)
FIELD = "vignette_response"
# lmms-eval does not log how many attempts a request took nor the model name the server replied with
NOT_RECOVERED: tuple[str, ...] = ("attempts", "server_model")
_NAME_KEYS = ("model", "model_version", "pretrained", "model_name")


def is_samples_file(path: Path) -> bool:
    """lmms-eval's per-task sample log (the results file and other JSON lines beside it are not answers)."""
    return path.suffix == ".jsonl" and "_samples_" in path.name


def model_name(samples: Path) -> str | None:
    """`lmms-eval/<backend>/<model>` from the results file written with `samples` (same date prefix), if any."""
    date = samples.name.split("_samples_", 1)[0]
    results = samples.with_name(f"{date}_results.json")
    try:
        config = json.loads(results.read_text(encoding="utf-8")).get("config") or {}
    except (OSError, ValueError, AttributeError):
        return None
    backend = str(config.get("model") or "")
    args = config.get("model_args") or ""
    if isinstance(args, str):  # "model=x,base_url=y"
        args = dict(a.partition("=")[::2] for a in args.split(",") if "=" in a)
    name = next((str(args[k]) for k in _NAME_KEYS if isinstance(args, dict) and args.get(k)), "")
    return "/".join(p for p in ("lmms-eval", backend, name) if p) if backend or name else None


def read_file(path: Path, shown: str, model_id: str | None, answers: Answers) -> tuple[int, str, set[tuple[str, str]]]:
    """Adds one samples file's answers to `answers`; (how many, the model that answered, the distinct
    (settings, dataset) JSON pairs its answers carry)."""
    model = model_id or model_name(path) or "lmms-eval"
    problems: Problems = answers.problems
    n_rows = 0
    runs: set[tuple[str, str]] = set()
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        problems.add(shown, None, None, f"cannot be read ({type(e).__name__}: {e})")
        return 0, model, runs
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            sample = json.loads(line)
        except ValueError as e:
            problems.add(shown, n, None, f"not JSON ({e}): is this lmms-eval's --log_samples output?")
            continue
        answer = sample.get(FIELD) if isinstance(sample, dict) else None
        if (
            not isinstance(answer, dict)
            or not isinstance(answer.get("row"), dict)
            or not answer["row"].get("question_id")
        ):
            problems.add(
                shown,
                n,
                FIELD,
                "missing: is this a log of a VIGNETTE task (lmms-eval --include_path vignette_bench/lmms_eval_tasks)?",
            )
            continue
        if isinstance(answer.get("settings"), str) and isinstance(answer.get("dataset"), str):
            runs.add((answer["settings"], answer["dataset"]))
        row = dict(answer["row"])
        row["model_id"] = model
        answers.add(row, f"{shown}: line {n} (doc {sample.get('doc_id')})")
        n_rows += 1
    if not lines:
        problems.add(shown, None, None, "empty: the task logged no samples")
    return n_rows, model, runs


def provenance(runs: set[tuple[str, str]], model_id: str, problems: Problems) -> tuple[Any, Any]:
    """The run settings and dataset provenance the logs' answers carry, as `vignette run` records them (the
    configs joined when several tasks were logged); logs of several sources, image sets or settings are one
    problem (import them separately). (None, None) for logs that carry none."""
    from vignette_bench.formats.run_record import DatasetProvenance, RunSettings

    if not runs:
        return None, None
    settings = [RunSettings.from_json(json.loads(s), "log: vignette_response.settings") for s, _ in sorted(runs)]
    datasets = [json.loads(d) for _, d in sorted(runs)]
    configs = "+".join(sorted({s.config for s in settings}))
    if (
        len({s.model_copy(update={"config": ""}).model_dump_json() for s in settings}) > 1
        or len({(d.get("source"), d.get("index_sha256")) for d in datasets}) > 1
    ):
        problems.add(
            "logs", None, FIELD, "the logs ask about several sources, image sets or settings: import each separately"
        )
        return None, None
    return (
        settings[0].model_copy(update={"config": configs, "model": model_id}),
        DatasetProvenance.from_json({**datasets[0], "config": configs}, "log: vignette_response.dataset", "dataset"),
    )
