"""Join the log parts of a run into RUN_DIR/responses.parquet: `python -m eval.merge RUN_DIR`.

Rows are deduplicated by question id (the log is append-only, so the latest answer wins: a
question re-asked with --retry-invalid replaces its invalid answer) and checked against the
planned question set, which is rebuilt from RUN_DIR/plan.parquet and RUN_DIR/run.json: a
missing or an unplanned question is an error, never written silently. The parquet is ordered
by the plan (pair order, then question order), so it does not depend on how the run was split
or interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from dataset_builder.taxonomy import load_taxonomy
from eval.questions import QuestionBuilder, Variants
from eval.runlog import iter_part, part_paths, tail_state

RESPONSES = "responses.parquet"
PLAN = "plan.parquet"
RUN_JSON = "run.json"
TAXONOMY_DIR = "taxonomy"  # the source's taxonomy, copied by the run: the questions' words come from it

_str, _strs = pa.string(), pa.list_(pa.string())
RESPONSE_SCHEMA = pa.schema(
    [
        ("question_id", _str), ("pair_id", _str), ("config", _str), ("gender", _str), ("dimension", _str),
        ("paradigm", _str), ("subtask", _str), ("template_id", _str), ("paraphrase", pa.int64()),
        ("option_style", _str), ("modality", _str), ("context", _str),
        ("identity_left", _str), ("identity_right", _str), ("activity_left", _str), ("activity_right", _str),
        ("options", _strs), ("option_identities", _strs), ("choice", _str), ("selected_identity", _str),
        ("candidates", _strs), ("probabilities", pa.list_(pa.float64())), ("valid", pa.bool_()), ("raw", _str),
        ("error", _str), ("direction", _str), ("trait_dimension", _str), ("chose_left", pa.bool_()),
        ("target_identity", _str), ("correct", pa.bool_()), ("seed", pa.int64()), ("model_id", _str),
    ]
)


class MergeError(RuntimeError):
    """The parts do not add up to the planned question set."""


@dataclass(frozen=True)
class MergeReport:
    planned: int
    answered: int
    duplicates: int  # rows replaced by a later answer to the same question
    missing: int
    unplanned: int
    invalid: int
    torn_parts: int  # parts ending in a torn line (its row is ignored)
    written: Path | None


def builder_from_run(run: dict[str, Any], run_dir: Path) -> QuestionBuilder:
    """The question builder a run used, from its run.json and the taxonomy copy it kept."""
    settings = run["settings"]
    variants = settings["variants"]
    kept = run_dir / TAXONOMY_DIR
    return QuestionBuilder(
        load_taxonomy(kept if kept.exists() else None),
        settings["seed"],
        settings["paradigms"],
        Variants(tuple(variants["paraphrase"]), tuple(variants["option_style"]), tuple(variants["modality"])),
    )


def planned_ids(run_dir: Path) -> Iterator[str]:
    """Every planned question id in plan order."""
    run = json.loads((run_dir / RUN_JSON).read_text())
    builder = builder_from_run(run, run_dir)
    for row in pq.read_table(run_dir / PLAN).to_pylist():
        for q in builder(row):
            yield q.question_id


def merge(run_dir: str | Path, write: bool = True, allow_gaps: bool = False) -> MergeReport:
    """Deduplicate, check against the plan, and (if complete or allow_gaps) write responses.parquet."""
    run_dir = Path(run_dir)
    for name in (RUN_JSON, PLAN):
        if not (run_dir / name).exists():
            raise MergeError(f"{run_dir / name} missing: is {run_dir} a run folder written by `python -m eval.run`?")
    latest: dict[str, dict[str, Any]] = {}
    rows = torn = 0
    for path in part_paths(run_dir):
        torn += tail_state(path)[1]
        for row in iter_part(path):
            latest[row["question_id"]] = row
            rows += 1
    order = list(planned_ids(run_dir))
    planned = set(order)
    missing = [q for q in order if q not in latest]
    unplanned = [q for q in latest if q not in planned]
    report = MergeReport(
        planned=len(order), answered=len(latest), duplicates=rows - len(latest), missing=len(missing),
        unplanned=len(unplanned), invalid=sum(not r.get("valid") for r in latest.values()), torn_parts=torn, written=None,
    )
    if unplanned:
        raise MergeError(f"{run_dir}: {len(unplanned)} answered question(s) are not in the plan (e.g. {unplanned[:3]}); "
                         f"the log mixes runs with different settings — keep one run per folder")
    if missing and not allow_gaps:
        if write:
            raise MergeError(f"{run_dir}: {len(missing)} of {len(order)} planned question(s) have no answer (e.g. {missing[:3]}); "
                             f"rerun `python -m eval.run` with the same --out (it resumes), or pass --allow-gaps")
        return report
    if not write:
        return report
    kept = [latest[q] for q in order if q in latest]
    schema = RESPONSE_SCHEMA
    if any("attn_left_share" in r for r in kept):  # attention was recorded: keep its columns (eval.attention)
        from eval.attention import attention_schema

        schema = pa.schema([*RESPONSE_SCHEMA, *attention_schema()])
    table = pa.Table.from_pylist(kept, schema=schema)
    out = run_dir / RESPONSES
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, out)  # atomic: a reader never sees half a file
    return MergeReport(**{**report.__dict__, "written": out})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", help="the --out folder of `python -m eval.run`")
    parser.add_argument("--allow-gaps", action="store_true", help="write the parquet even if planned questions are unanswered")
    parser.add_argument("--check", action="store_true", help="only report; write nothing")
    args = parser.parse_args(argv)
    try:
        report = merge(args.run_dir, write=not args.check, allow_gaps=args.allow_gaps)
    except MergeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(json.dumps({k: (str(v) if isinstance(v, Path) else v) for k, v in report.__dict__.items()}))
    return 0 if report.missing == 0 or args.allow_gaps else 1


if __name__ == "__main__":
    sys.exit(main())
