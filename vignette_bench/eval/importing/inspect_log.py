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

from vignette_bench.eval.importing.core import Answers

SUFFIXES = (".eval", ".json")
SCORER = "vignette_choice"
NOT_RECOVERED: tuple[str, ...] = ()  # the log holds every field `vignette run` records


def read_file(path: Path, shown: str, model_id: str | None, answers: Answers) -> tuple[int, str]:
    """(answers added, the model that answered) of one log file."""
    from inspect_ai.log import read_eval_log

    problems = answers.problems

    try:
        log = read_eval_log(str(path))
    except Exception as e:  # any parse failure of a file we did not write
        problems.add(shown, None, "log", f"not an inspect_ai log ({type(e).__name__}: {e})")
        return 0, model_id or "unknown"
    model = model_id or str(log.eval.model)
    added = 0
    if log.status != "success":
        problems.add(shown, None, "status", f"the eval ended {log.status!r}: import a finished log")
    for i, sample in enumerate(log.samples or [], 1):
        score = (sample.scores or {}).get(SCORER)
        response = (score.metadata or {}).get("response") if score is not None else None
        if not isinstance(response, dict):
            problems.add(
                shown, i, "scores", f"no {SCORER} score with a response row: is this a log of the VIGNETTE task?"
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
    if not log.samples:
        problems.add(shown, None, "samples", "the log holds no samples (was it written with --no-log-samples?)")
    return added, model


def _reply_choice(row: dict[str, Any]) -> str | None:
    """The option the model's reply names, parsed as the task's scorer parses it (match_option)."""
    from vignette_bench.eval.adapters.base import match_option

    options = row.get("options")
    if not isinstance(options, list | tuple) or not all(isinstance(o, str) for o in options):
        return None
    return match_option(str(row.get("raw") or ""), tuple(options))


def _short(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "…")
