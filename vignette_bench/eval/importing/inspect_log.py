"""Answers from an inspect_ai log of the VIGNETTE task (vignette_bench/inspect_tasks.py) as responses rows.

Each sample's `vignette_choice` score carries the full responses-schema row (`Question.response`, the
same code `vignette run` uses) and the sample's output is the model's raw reply, so nothing is
re-derived here: the rows are checked by the one responses reader when the run folder is written.
A log of another task, or a sample the scorer never reached, is named as a problem.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vignette_bench.eval.importing.core import Problems

SUFFIXES = (".eval", ".json")
NOT_LOGS = ("logs.json", "eval-set.json")  # what `inspect eval-set` writes beside its logs
SCORER = "vignette_choice"
NOT_RECOVERED: tuple[str, ...] = ()  # the log holds every field `vignette run` records


def read_file(
    path: Path, shown: str, model_id: str | None, problems: Problems
) -> tuple[list[dict], list[str], str, dict[str, Any] | None]:
    """(rows, where each row came from, the model that answered, the task's metadata: the run settings and
    the dataset's provenance) of one log file. A log that failed, or of another task, is one problem."""
    from inspect_ai.log import read_eval_log

    try:
        log = read_eval_log(str(path))
    except Exception as e:  # any parse failure of a file we did not write
        problems.add(shown, None, "log", f"not an inspect_ai log ({type(e).__name__}: {str(e).splitlines()[0][:200]})")
        return [], [], model_id or "unknown", None
    model = model_id or str(log.eval.model)
    rows: list[dict[str, Any]] = []
    where: list[str] = []
    task_meta = log.eval.metadata or {}
    if "vignette_settings" not in task_meta or "dataset" not in task_meta:
        problems.add(shown, None, "task", f"a log of task {log.eval.task!r}, not of a VIGNETTE task (docs/inspect.md)")
        return [], [], model, None
    if log.status != "success":
        why = (log.error.message.splitlines() or [""])[0][:300] if log.error is not None else ""
        problems.add(
            shown, None, "status", f"the eval ended {log.status!r}{f' ({why})' if why else ''}: import a finished log"
        )
        return [], [], model, None
    unscored: list[str] = []  # samples the scorer never reached (an error inside the sample): one problem for all
    for sample in log.samples or []:
        score = (sample.scores or {}).get(SCORER)
        response = (score.metadata or {}).get("response") if score is not None else None
        if not isinstance(response, dict):
            unscored.append(
                f"{sample.id}" + (f" ({sample.error.message.splitlines()[0][:200]})" if sample.error else "")
            )
            continue
        row = dict(response)
        row["raw"] = sample.output.completion if sample.output is not None else ""
        row["model_id"] = model
        rows.append(row)
        where.append(f"{shown}: sample {sample.id}")
    if unscored:
        problems.add(shown, None, "scores", f"{len(unscored)} sample(s) have no {SCORER} score, e.g. {unscored[0]}")
    if not log.samples:
        problems.add(shown, None, "samples", "the log holds no samples (was it written with --no-log-samples?)")
    return rows, where, model, task_meta


def provenance(tasks: list[dict[str, Any]], model_id: str, problems: Problems) -> tuple[Any, Any]:
    """The run settings and dataset provenance of the logs' tasks (their metadata, as the task recorded it:
    source, index digest, placeholder status), as `vignette run` records them; logs of several sources or
    image sets are one problem (import them separately)."""
    from vignette_bench.formats.run_record import DatasetProvenance, RunSettings

    pinned = {(t["dataset"].get("source"), t["dataset"].get("index_sha256")) for t in tasks}
    if len(pinned) > 1:
        problems.add(
            "logs", None, "dataset", f"the logs ask about {len(pinned)} sources or image sets: import each separately"
        )
        return None, None
    configs = "+".join(sorted({t["dataset"]["config"] for t in tasks}))
    first = tasks[0]
    settings = RunSettings.from_json(first["vignette_settings"], "log: vignette_settings").model_copy(
        update={"config": configs, "model": model_id}
    )
    fields = {**first["dataset"], "config": configs}
    if len({t["dataset"]["config"] for t in tasks}) > 1:
        fields["selection"] = None  # each config's own selection; one record cannot hold them all
    fields["placeholder"] = (
        any(bool(t["dataset"].get("placeholder")) for t in tasks)
        if all(t["dataset"].get("placeholder") is not None for t in tasks)
        else None
    )
    return settings, DatasetProvenance.from_json(fields, "log: dataset", "dataset")
