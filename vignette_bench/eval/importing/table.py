"""A documented generic table (CSV, parquet or JSONL) of answers from any harness (docs/import.md, "table").

One row per answer. Columns:

* `question`: the question's text, one of this project's wordings (any paraphrase; the taxonomy's role
  questions), or instead `template_id` + `context` (e.g. `perception/struggle` + `cooking`);
* `identity_left`, `identity_right`: the two people, left first (identity names or descriptors such as
  "old woman");
* `options`: the options in the order shown (a list; in a CSV a JSON or Python list string);
* `answer`: the option chosen (empty: no valid answer);
* optional `probabilities` (one per option), `image` (an image id: answers that share it share a cluster),
  `activity_left`/`activity_right` (the people's activities), `target` (factuality: `left` or `right`, the
  person asked about; default left), `sides_known` (false: the left/right columns are not the sides shown).
"""

from __future__ import annotations

import ast
import csv
import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vignette_bench.eval.importing.core import (
    Answers,
    Identities,
    Person,
    answer_row,
    lookalike,
    match_template,
    norm,
    perception_subtask,
    text_codec,
)
from vignette_bench.eval.runtime.questions import TEMPLATES
from vignette_bench.taxonomy import Taxonomy

FORMAT = "table"
SUFFIXES = (".csv", ".parquet", ".jsonl")
REQUIRED = ("identity_left", "identity_right", "options", "answer")
SIDES_UNKNOWN = "sides unknown: rates not side-balanced (the left/right columns are not the sides shown)"


def _columns(path: Path, encoding: str) -> list[str]:
    """The table's column names: a CSV's header, a parquet schema, the keys of a JSONL file's first object."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        return list(pq.ParquetFile(path).schema_arrow.names)
    with path.open(newline="", encoding=text_codec(encoding)) as f:
        if suffix == ".jsonl":
            for line in f:
                if line.strip():
                    first = json.loads(line)
                    return list(first) if isinstance(first, dict) else []
            return []
        return next(csv.reader(f), [])


def _records(path: Path, encoding: str, bad: Callable[[int, str | None, str], None]) -> Iterator[tuple[int, dict]]:
    """(row number, row) one at a time, so no second copy of the file is built in memory: CSV rows are
    numbered as a spreadsheet shows them (the header is row 1), JSONL rows by line, parquet rows from 1.
    A line that is not JSON, or not an object, is `bad` (named by its line) and skipped."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        n = 0
        for batch in pq.ParquetFile(path).iter_batches(batch_size=4096):
            for r in batch.to_pylist():
                n += 1
                yield n, r
        return
    with path.open(newline="", encoding=text_codec(encoding)) as f:
        if suffix == ".jsonl":
            for n, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                except ValueError as e:
                    bad(n, None, f"line {n} is not valid JSON ({e})")
                    continue
                if not isinstance(r, dict):
                    bad(n, None, f"line {n} is a JSON {type(r).__name__}, not an object of columns")
                    continue
                yield n, r
            return
        yield from enumerate((dict(r) for r in csv.DictReader(f)), start=2)


def _empty(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and not v.strip())


def _list(v: Any) -> list | None:
    if _empty(v):
        return None
    if isinstance(v, str):
        try:
            v = json.loads(v)
        except ValueError:
            try:
                v = ast.literal_eval(v)
            except (ValueError, SyntaxError):
                return None
    try:
        return list(v)
    except TypeError:
        return None


def _bool(v: Any) -> bool | None:
    if _empty(v):
        return None
    if isinstance(v, bool):
        return v
    return {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}.get(str(v).strip().lower())


def _question(r: dict, taxonomy: Taxonomy, acts: tuple[str, str]) -> tuple[str, str, int, str] | str:
    """(paradigm/template id, subtask, paraphrase, context) the row asks, or why not."""
    text = r.get("question")
    if not _empty(r.get("template_id")):
        tid, context = str(r["template_id"]).strip(), str(r.get("context") or "").strip()
        if tid not in TEMPLATES and not tid.startswith("decision/"):
            return f"template_id: {tid!r} is not one of {sorted(TEMPLATES)} or decision/<dimension>"
        if not context:
            return "context: empty (the activity, trait term or role question the template asks about)"
        return tid, tid.split("/", 1)[1], 0, context
    if _empty(text):
        return "question: empty, and no template_id + context"
    for a in dict.fromkeys(x for x in acts if x):
        found = perception_subtask(text, a)
        if found:
            return f"perception/{found[0]}", found[0], found[1], a
    for term, _, _ in taxonomy.trait_terms:
        k = match_template("stereotype/trait", text, term=term)
        if k is not None:
            return "stereotype/trait", "", k, term
    for rq in taxonomy.role_questions:
        if norm(rq.question) == norm(text):
            return f"decision/{rq.dimension}", rq.dimension, 0, rq.question
    return f"question: {text!r} is none of this project's question wordings (docs/import.md)"


def read_file(
    path: Path,
    shown: str,
    taxonomy: Taxonomy,
    identities: Identities,
    model_id: str,
    answers: Answers,
    encoding: str = "utf-8",
) -> tuple[int, tuple[str, ...], tuple[str, ...]]:
    """Add the answers of one table to `answers` (problems to `answers.problems`); returns how many, what
    the table could not say and what that means. The caller has checked that a CSV or JSONL file is text
    in `encoding` (core.text_problem)."""
    problems = answers.problems
    try:
        columns = _columns(path, encoding)
    except Exception as e:  # noqa: BLE001 (any reader's failure is the file's problem, said in one line)
        why = f"line 1 is not valid JSON ({e})" if isinstance(e, ValueError) and path.suffix == ".jsonl" else None
        problems.add(shown, None, None, why or f"not a readable {path.suffix} table ({type(e).__name__}: {e})")
        return 0, (), ()
    missing = [c for c in REQUIRED if c not in columns]
    if "question" not in columns and "template_id" not in columns:
        missing.append("question (or template_id + context)")
    if missing:
        problems.add(shown, None, None, f"lacks column(s) {missing} (docs/import.md, table)")
        return 0, (), ()
    known = {norm(a.name): a.name for a in taxonomy.activities}
    terms = {t: (d, dim) for t, d, dim in taxonomy.trait_terms}
    before = answers.count
    seen = {"sides_unknown": False, "probabilities": False, "image": False}
    try:
        for i, r in _records(path, encoding, lambda n, column, why: problems.add(shown, n, column, why)):
            _row(i, r, shown, taxonomy, identities, model_id, answers, known, terms, seen)
    except (csv.Error, OSError) as e:  # a field over the csv module's limit; a parquet file cut short
        problems.add(shown, None, None, f"not a readable {path.suffix} table ({type(e).__name__}: {e})")
    except Exception as e:
        import pyarrow as pa

        if not isinstance(e, pa.ArrowException):
            raise
        problems.add(shown, None, None, f"not a readable {path.suffix} table ({type(e).__name__}: {e})")
    not_recovered = [
        "render clusters: none (" + ("the image id is the cluster)" if seen["image"] else "no image id: one per pair)")
    ]
    if not seen["probabilities"]:
        not_recovered.append("probabilities: none")
    consequences = []
    if seen["sides_unknown"]:
        not_recovered.append("sides: unknown for some rows (sides_known false)")
        consequences.append(SIDES_UNKNOWN)
    return answers.count - before, tuple(not_recovered), tuple(consequences)


@dataclass(frozen=True)
class _Row:
    """One table row's pair, options, answer and question, each checked against the taxonomy."""

    left: Person
    right: Person
    acts: tuple[str, str]  # the left and right person's activity ("" when not given)
    options: list[Any]
    choice: Any
    answer: Any  # as given (the raw answer)
    probabilities: list[float] | None
    question: tuple[str, str, int, str]  # template id, subtask, paraphrase, context


Bad = Callable[[str, str], None]  # names a problem at a column of the current row


def _row(
    i: int,
    r: dict[str, Any],
    shown: str,
    taxonomy: Taxonomy,
    identities: Identities,
    model_id: str,
    answers: Answers,
    known: dict[str, str],
    terms: dict[str, tuple[str, str]],
    seen: dict[str, bool],
) -> None:
    """Check row `i` and add its answer to `answers` (or its problems)."""
    problems = answers.problems
    before = len(problems.items)

    def bad(column: str, why: str, i: int = i) -> None:
        problems.add(shown, i, column, why)

    parsed = _parse(r, taxonomy, identities, known, seen, bad)
    if len(problems.items) > before or parsed is None:
        return
    row = _answer(r, parsed, identities, model_id, terms, seen, bad)
    if row is not None:
        answers.add(row, f"{shown}: row {i}")


def _parse(
    r: dict[str, Any],
    taxonomy: Taxonomy,
    identities: Identities,
    known: dict[str, str],
    seen: dict[str, bool],
    bad: Bad,
) -> _Row | None:
    """The row's people, activities, options, choice, probabilities and question; every problem is named
    through `bad`, and None when the question or the options are missing. Notes in `seen` whether the
    table gives probabilities and whether some rows' sides are unknown."""
    people = []
    for col in ("identity_left", "identity_right"):
        v = r.get(col)
        p = None if _empty(v) else identities.find(v)
        if p is None:
            bad(col, f"{v!r} is no identity of the taxonomy")
        people.append(p)
    acts = []
    for col in ("activity_left", "activity_right"):
        v = r.get(col)
        a = "" if _empty(v) else known.get(norm(v))
        if a is None:
            bad(col, f"{v!r} is not a taxonomy activity")
        acts.append(a or "")
    options = _list(r.get("options"))
    if options is None or len(options) < 2 or not all(isinstance(o, str) for o in options):
        bad("options", f"{r.get('options')!r} is not a list of two or more option strings")
        options = None
    for said, column in [(o, "options") for o in options or []] + [(r.get("answer"), "answer")]:
        if (why := lookalike(said)) is not None:
            bad(column, why)
            options = None if column == "options" else options
    answer = r.get("answer")
    choice = None
    if options is not None and not _empty(answer):
        match = [o for o in options if norm(o) == norm(answer)]
        if not match:
            bad("answer", f"{answer!r} is not one of the options {options}")
        else:
            choice = match[0]
    probs = _list(r.get("probabilities"))
    if probs is not None:
        try:
            probs = [float(p) for p in probs]
        except (TypeError, ValueError):
            bad("probabilities", f"{r.get('probabilities')!r} are not numbers")
        seen["probabilities"] = True
    q = _question(r, taxonomy, (acts[0], acts[1]))
    if isinstance(q, str):
        column, _, why = q.partition(": ")
        bad(column, why)
    known_sides = _bool(r.get("sides_known"))
    if known_sides is None and not _empty(r.get("sides_known")):
        bad("sides_known", f"{r.get('sides_known')!r} is not true or false (also yes/no, 1/0; empty: true)")
    if known_sides is False:
        seen["sides_unknown"] = True
    left, right = people
    if isinstance(q, str) or options is None or left is None or right is None:
        return None
    return _Row(left, right, (acts[0], acts[1]), options, choice, answer, probs, q)


def _answer(
    r: dict[str, Any],
    p: _Row,
    identities: Identities,
    model_id: str,
    terms: dict[str, tuple[str, str]],
    seen: dict[str, bool],
    bad: Bad,
) -> dict[str, Any] | None:
    """The response row of one parsed table row; None (the problem named) when its paradigm's own check fails."""
    left, right, acts, options = p.left, p.right, p.acts, p.options
    tid, subtask, paraphrase, context = p.question
    paradigm = tid.split("/")[0]
    if left.dimension != right.dimension:
        bad(
            "identity_right",
            f"{right.identity!r} ({right.dimension}) and {left.identity!r} ({left.dimension}) differ",
        )
        return None
    gender = "mixed" if left.dimension == "gender" else (left.gender or right.gender or str(r.get("gender") or ""))
    image = None if _empty(r.get("image")) else str(r["image"])
    seen["image"] = seen["image"] or image is not None
    extra: dict[str, Any] = {}
    if paradigm == "stereotype":
        if context not in terms:
            bad("context", f"{context!r} is not a taxonomy trait term")
            return None
        extra = dict(direction=terms[context][0], trait_dimension=terms[context][1])
        subtask = terms[context][1]
    if paradigm == "factuality":
        target = str(r.get("target") or "left").strip().lower()
        if target not in ("left", "right"):
            bad("target", f"{target!r} is not left or right")
            return None
        extra = dict(subject=target, target_identity=(left if target == "left" else right).identity)
        identities_of = [""] * len(options)
    else:
        identities_of = [_who(o, left, right, identities) for o in options]
    config = (
        "portraits"
        if paradigm == "stereotype"
        else ("identity_contrast" if acts[0] == acts[1] else "identity_activity_contrast")
    )
    return answer_row(
        config=config,
        gender=gender,
        dimension=left.dimension,
        paradigm=paradigm,
        subtask=subtask,
        template_id=tid,
        paraphrase=paraphrase,
        context=context,
        left=left.identity,
        right=right.identity,
        activity_left=acts[0],
        activity_right=acts[1],
        key_left=None,
        key_right=None,
        options=[str(o) for o in options],
        option_identities=identities_of,
        choice=p.choice,
        raw="" if _empty(p.answer) else str(p.answer),
        probabilities=p.probabilities,
        model_id=model_id,
        pair_id=f"{FORMAT}/{image}" if image is not None else None,
        **extra,
    )


def _who(option: str, left: Person, right: Person, identities: Identities) -> str:
    """The identity an option names: one of the pair (with or without "the"), or a taxonomy form of one; ""
    for an option that names neither."""
    o = norm(option)
    o = o[4:] if o.startswith("the ") else o
    for p in (left, right):
        if o == norm(p.identity):
            return p.identity
    found = identities.find(o, left.dimension)
    return found.identity if found is not None and found.identity in (left.identity, right.identity) else ""
