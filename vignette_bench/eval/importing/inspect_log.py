"""Answers from an inspect_ai log of the VIGNETTE task (vignette_bench/inspect_tasks.py) as responses rows.

Each sample's `vignette_choice` score carries the full responses-schema row (`Question.response`, the
same code `vignette run` uses) and the sample's output is the model's raw reply, so nothing is
re-derived here: the rows are checked by the one responses reader when the run folder is written,
and the recorded choice is compared with the option the raw reply names (an edited score is refused).
A log of another task, or a sample the scorer never reached, is named as a problem.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vignette_bench.eval.importing.core import Answers, Problems

SUFFIXES = (".eval", ".json")
NOT_LOGS = ("logs.json", "eval-set.json")  # what `inspect eval-set` writes beside its logs
SCORER = "vignette_choice"
NOT_RECOVERED: tuple[str, ...] = ()  # the log holds every field `vignette run` records


def read_file(path: Path, shown: str, model_id: str | None, answers: Answers) -> tuple[int, str, dict[str, Any] | None]:
    """Adds one log file's answers to `answers`; (how many, the model that answered, the task's metadata: the
    run settings and the dataset's provenance). A log that failed, or of another task, is one problem."""
    from inspect_ai.log import read_eval_log

    problems = answers.problems
    try:
        log = read_eval_log(str(path))
    except Exception as e:  # any parse failure of a file we did not write
        problems.add(shown, None, "log", f"not an inspect_ai log ({type(e).__name__}: {str(e).splitlines()[0][:200]})")
        return 0, model_id or "unknown", None
    model = model_id or str(log.eval.model)
    task_meta = log.eval.metadata or {}
    if "vignette_settings" not in task_meta or "dataset" not in task_meta:
        problems.add(shown, None, "task", f"a log of task {log.eval.task!r}, not of a VIGNETTE task (docs/inspect.md)")
        return 0, model, None
    if log.status != "success":
        why = (log.error.message.splitlines() or [""])[0][:300] if log.error is not None else ""
        problems.add(
            shown, None, "status", f"the eval ended {log.status!r}{f' ({why})' if why else ''}: import a finished log"
        )
        return 0, model, None
    added = 0
    unscored: list[str] = []  # samples the scorer never reached (an error inside the sample): one problem for all
    for i, sample in enumerate(log.samples or [], 1):
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
        said = _reply_choice(row)
        if said != row.get("choice"):  # a score edited after the fact: the reply is what the model said
            problems.add(
                shown,
                i,
                "scores",
                f"sample {sample.id}: the score records the choice {row.get('choice')!r}, but the model's reply "
                f"{_short(row['raw'])} names {said!r}; import the log as inspect wrote it (or re-score it)",
            )
            continue
        answers.add(row, f"{shown}: sample {sample.id}")
        added += 1
    if unscored:
        problems.add(shown, None, "scores", f"{len(unscored)} sample(s) have no {SCORER} score, e.g. {unscored[0]}")
    if not log.samples:
        problems.add(shown, None, "samples", "the log holds no samples (was it written with --no-log-samples?)")
    return added, model, task_meta


def _reply_choice(row: dict[str, Any]) -> str | None:
    """The option the model's reply names, parsed as the task's scorer parses it (match_option)."""
    from vignette_bench.eval.adapters.base import match_option

    options = row.get("options")
    if not isinstance(options, list | tuple) or not all(isinstance(o, str) for o in options):
        return None
    return match_option(str(row.get("raw") or ""), tuple(options))


def _short(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "…")


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
