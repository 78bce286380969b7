"""Join the log parts of a run into RUN_DIR/responses.parquet: `vignette merge RUN_DIR`.

Rows are deduplicated by question id (the log is append-only: a question re-asked with
--retry-invalid, or after a backend failure, replaces its invalid answer; a valid answer is never
replaced, and two different valid answers to one question are refused) and checked against the
planned question set, which is rebuilt from the run's plan and record (folder.py): a
missing or an unplanned question is an error, never written silently. The parquet is ordered
by the plan (pair order, then question order), so it does not depend on how the run was split
or interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from vignette_bench.errors import VignetteError
from vignette_bench.eval.runtime.arguments import merge_add_arguments as add_arguments  # noqa: F401 (the parser lives in a light module)
from vignette_bench.eval.runtime.folder import RunFolder
from vignette_bench.eval.runtime.questions import QuestionBuilder
from vignette_bench.formats.jsonl import iter_part, tail_state
from vignette_bench.formats.responses import ResponsesError, check_table, schema_for
from vignette_bench.formats.run_record import RecordError, RunRecord
from vignette_bench.taxonomy import load_taxonomy


class MergeError(VignetteError):
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


def builder_from_record(record: RunRecord, folder: RunFolder) -> QuestionBuilder:
    """The question builder a run used, from its record and the taxonomy copy it kept."""
    s = record.settings
    return QuestionBuilder(load_taxonomy(folder.kept_taxonomy()), s.seed, s.paradigms, s.variants)


def planned_ids(folder: RunFolder) -> Iterator[str]:
    """Every planned question id in plan order."""
    builder = builder_from_record(folder.read_record(), folder)
    for row in folder.read_plan().to_pylist():
        for q in builder(row):
            yield q.question_id


def merge(
    run_dir: str | Path,
    write: bool = True,
    allow_gaps: bool = False,
    held: Mapping[Path, Sequence[dict[str, Any]]] | None = None,
) -> MergeReport:
    """Deduplicate, check against the plan, and (if complete or allow_gaps) write responses.parquet.

    ``held``: the complete rows of some parts, in file order, that the caller already holds (`vignette run`
    holds its own part: what it read on resuming plus what it appended, under the part's lock), taken
    instead of decoding those files again; every other part is read from disk."""
    folder = RunFolder(run_dir)
    run_dir = folder.path
    for path in (folder.record_path, folder.plan_path):
        if not path.exists():
            raise MergeError(f"{path} missing: is {run_dir} a run folder written by `vignette run`?")
    latest: dict[str, dict[str, Any]] = {}
    where: dict[str, str] = {}  # question id -> "part:line" of the answer kept
    conflicts: list[str] = []
    rows = torn = 0
    held = held or {}
    for path in folder.part_paths():
        if path in held:  # the writer closed it whole (no torn tail): its rows are these
            part_rows: Iterator[dict[str, Any]] = iter(held[path])
        else:
            torn += tail_state(path)[1]
            part_rows = iter_part(path)
        for line, row in enumerate(part_rows, 1):
            rows += 1
            q, here = row["question_id"], f"{path.name}:{line}"
            earlier = latest.get(q)
            if earlier is not None and earlier.get("valid"):
                # a valid answer is never replaced: a re-ask (--retry-invalid, a resumed backend failure)
                # only ever follows an invalid one, so a second, different answer means mixed logs
                if row.get("valid") and row.get("choice") != earlier.get("choice"):
                    conflicts.append(
                        f"question {q!r}: {earlier.get('choice')!r} ({where[q]}) and {row.get('choice')!r} ({here})"
                    )
                continue
            latest[q], where[q] = row, here
    if conflicts:
        raise MergeError(
            f"{run_dir}: {len(conflicts)} question(s) have two different valid answers in the log "
            f"(e.g. {'; '.join(conflicts[:3])}); an answer is replaced only when the earlier one was invalid — "
            "keep one run per folder, or remove the part that re-answered them"
        )
    order = list(planned_ids(folder))
    planned = set(order)
    missing = [q for q in order if q not in latest]
    unplanned = [q for q in latest if q not in planned]
    report = MergeReport(
        planned=len(order),
        answered=len(latest),
        duplicates=rows - len(latest),
        missing=len(missing),
        unplanned=len(unplanned),
        invalid=sum(not r.get("valid") for r in latest.values()),
        torn_parts=torn,
        written=None,
    )
    if unplanned:
        raise MergeError(
            f"{run_dir}: {len(unplanned)} answered question(s) are not in the plan (e.g. {unplanned[:3]}); "
            f"the log mixes runs with different settings — keep one run per folder"
        )
    if missing and not allow_gaps:
        if write:
            raise MergeError(
                f"{run_dir}: {len(missing)} of {len(order)} planned question(s) have no answer (e.g. {missing[:3]}); "
                f"rerun `vignette run` with the same --out (it resumes), or pass --allow-gaps"
            )
        return report
    if not write:
        return report
    kept = [latest[q] for q in order if q in latest]
    schema = schema_for(any("attn_left_share" in r for r in kept))  # attention recorded: keep its columns
    table = check_table(pa.Table.from_pylist(kept, schema=schema), f"{folder.log_dir}/ (merged)")  # the reader's checks
    out = folder.write_responses(table)  # atomic: a reader never sees half a file
    return MergeReport(**{**report.__dict__, "written": out})


def main(args: argparse.Namespace) -> int:
    try:
        report = merge(args.run, write=not args.dry_run, allow_gaps=args.allow_gaps)
    except (MergeError, RecordError, ResponsesError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2  # cannot merge; 1 is a merge that found gaps
    print(json.dumps({k: (str(v) if isinstance(v, Path) else v) for k, v in report.__dict__.items()}))
    return 0 if report.missing == 0 or args.allow_gaps else 1
