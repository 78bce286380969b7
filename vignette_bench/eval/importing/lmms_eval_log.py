"""Answers from lmms-eval's `--log_samples` output of the VIGNETTE tasks (vignette_bench/lmms_eval_tasks) as
responses rows.

lmms-eval writes `<output_path>/<model>/<date>_samples_<task>.jsonl` (one line per question) beside
`<date>_results.json`. Each line of a VIGNETTE task carries the responses-schema row under `vignette_response`,
made by `Question.response` inside the task (the same code `vignette run` uses), and the question's fields under
`doc`; so nothing is re-derived here. The model is named in the results file (`config.model`, and the `model`,
`model_version` or `pretrained` of `config.model_args`) unless `--model` names it. A line of another task, or a
file that is not JSON lines, is named as a problem.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vignette_bench.eval.importing.core import Problems

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


def read_file(path: Path, shown: str, model_id: str | None, problems: Problems) -> tuple[list[dict], list[str], str]:
    """(rows, where each row came from, the model that answered) of one samples file."""
    model = model_id or model_name(path) or "lmms-eval"
    rows: list[dict[str, Any]] = []
    where: list[str] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        problems.add(shown, None, None, f"cannot be read ({type(e).__name__}: {e})")
        return [], [], model
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            sample = json.loads(line)
        except ValueError as e:
            problems.add(shown, n, None, f"not JSON ({e}): is this lmms-eval's --log_samples output?")
            continue
        response = sample.get(FIELD) if isinstance(sample, dict) else None
        if not isinstance(response, dict) or not response.get("question_id"):
            problems.add(
                shown,
                n,
                FIELD,
                "missing: is this a log of a VIGNETTE task (lmms-eval --include_path vignette_bench/lmms_eval_tasks)?",
            )
            continue
        doc = sample.get("doc") if isinstance(sample.get("doc"), dict) else {}
        if doc.get("question_id") not in (None, response["question_id"]):
            problems.add(
                shown, n, "doc", f"question {doc.get('question_id')!r} but the answer is to {response['question_id']!r}"
            )
            continue
        row = dict(response)
        row["model_id"] = model
        rows.append(row)
        where.append(f"{shown}: line {n} (doc {sample.get('doc_id')})")
    if not lines:
        problems.add(shown, None, None, "empty: the task logged no samples")
    return rows, where, model
