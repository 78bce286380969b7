"""What every importer shares: matching descriptors to the taxonomy and questions to the templates, the
problem list, and writing the run folder (responses checked by the one responses reader, then run.json)."""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vignette_bench.errors import VignetteError
from vignette_bench.eval.runtime.questions import TEMPLATES, question_id, template_hash
from vignette_bench.formats.responses import RESPONSE_COLUMNS, RESPONSE_SCHEMA, ResponsesError, check_columns, outcome
from vignette_bench.formats.run_record import (
    DatasetProvenance,
    ImportedFile,
    ImportedProvenance,
    ModelProvenance,
    RunRecord,
    RunSettings,
)
from vignette_bench.taxonomy import Taxonomy, slug

MAX_LISTED = 50
GENDER_WORDS = {"male", "female", "boy", "girl", "boys", "girls"}  # dropped when a descriptor is neutralised
PERSON_WORDS = {"man", "woman", "men", "women"}  # become "person"
PERCEPTION = ("struggle", "capability", "enjoyment", "dislike")


class ImportProblems(VignetteError):
    """Rows that cannot be imported; the message lists each with its file, row and column."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        shown = self.problems[:MAX_LISTED]
        more = f"\n  … and {len(self.problems) - len(shown)} more" if len(self.problems) > len(shown) else ""
        super().__init__(
            f"{len(self.problems)} problem(s); nothing was written (docs/import.md):\n  " + "\n  ".join(shown) + more
        )


@dataclass
class Problems:
    items: list[str] = field(default_factory=list)

    def add(self, file: str, row: int | None, column: str | None, why: str) -> None:
        where = file + (f": row {row}" if row is not None else "") + (f": {column}" if column else "")
        self.items.append(f"{where}: {why}")


def norm(text: Any) -> str:
    """Lower case, single spaces, no trailing full stop (how two wordings are compared)."""
    return re.sub(r"\s+", " ", str(text).strip().lower()).rstrip(" .?!") if text is not None else ""


def neutral(descriptor: str) -> str:
    """The paper's neutralised descriptor: male/female/boy/girl dropped, man/woman -> person."""
    words = norm(descriptor.replace("-", " ").replace("_", " ")).split()
    return " ".join("person" if w in PERSON_WORDS else w for w in words if w not in GENDER_WORDS)


@dataclass(frozen=True)
class Person:
    identity: str
    dimension: str
    gender: str  # male | female | mixed (the gender dimension) | "" (not said)


class Identities:
    """Descriptors ("old woman", "little boy", "pakistani-man") -> taxonomy identities."""

    def __init__(self, taxonomy: Taxonomy):
        self.by_form: dict[str, Person] = {}
        self.by_neutral: dict[str, list[Person]] = {}
        for i in taxonomy.identities:
            mixed = i.dimension == "gender"
            for gender, form in (("male", i.male_form), ("female", i.female_form)):
                if form:
                    self.by_form[norm(form)] = Person(i.name, i.dimension, "mixed" if mixed else gender)
            self.by_neutral.setdefault(neutral(i.name), []).append(
                Person(i.name, i.dimension, "mixed" if mixed else "")
            )

    def find(self, descriptor: Any, dimension: str | None = None) -> Person | None:
        text = norm(str(descriptor).replace("-", " ")) if descriptor is not None else ""
        if not text:
            return None
        if text in self.by_form and (not dimension or self.by_form[text].dimension == dimension):
            return self.by_form[text]
        words = neutral(text).split()
        key = " ".join(w for w in words if w != "person") or "person"
        found = [p for p in self.by_neutral.get(key, []) if not dimension or p.dimension == dimension]
        return found[0] if len(found) == 1 else None


def match_template(template_id: str, text: Any, **fill: str) -> int | None:
    """The paraphrase number of `template_id` that words `text` with `fill`, or None."""
    want = norm(text)
    for k, template in enumerate(TEMPLATES[template_id]):
        if norm(template.format(**fill)) == want:
            return k
    return None


def perception_subtask(text: Any, activity: str) -> tuple[str, int] | None:
    for s in PERCEPTION:
        k = match_template(f"perception/{s}", text, activity=activity)
        if k is not None:
            return s, k
    return None


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def answer_row(
    *,
    config: str,
    gender: str,
    dimension: str,
    paradigm: str,
    subtask: str,
    template_id: str,
    paraphrase: int,
    context: str,
    left: str,
    right: str,
    activity_left: str,
    activity_right: str,
    key_left: str | None,
    key_right: str | None,
    options: list[str],
    option_identities: list[str],
    choice: str | None,
    raw: str,
    probabilities: list[float] | None,
    model_id: str,
    subject: str = "",
    target_identity: str = "",
    direction: str = "",
    trait_dimension: str = "",
    pair_id: str | None = None,
) -> dict[str, Any]:
    """One responses-schema row; the derived columns come from `formats.responses.outcome`."""
    acts = slug(activity_left) if activity_left == activity_right else f"{slug(activity_left)}+{slug(activity_right)}"
    if pair_id is None:
        pair_id = f"{config}/{gender}/{slug(dimension)}/{slug(left)}+{slug(right)}" + (f"/{acts}" if acts else "")
    valid = choice is not None
    row: dict[str, Any] = {
        "question_id": question_id(pair_id, template_id, paraphrase, "identity", "image", context, subject),
        "pair_id": pair_id,
        "config": config,
        "gender": gender,
        "dimension": dimension,
        "paradigm": paradigm,
        "subtask": subtask,
        "template_id": template_id,
        "paraphrase": paraphrase,
        "option_style": "identity",
        "modality": "image",
        "context": context,
        "identity_left": left,
        "identity_right": right,
        "activity_left": activity_left,
        "activity_right": activity_right,
        "key_left": key_left,
        "key_right": key_right,
        "options": list(options),
        "option_identities": list(option_identities),
        "choice": choice,
        "candidates": [i for i in option_identities if i],
        "probabilities": probabilities if valid else None,
        "valid": valid,
        "raw": raw,
        "error": "" if valid else "no answer among the options",
        "direction": direction,
        "trait_dimension": trait_dimension,
        "chose_left": None,
        "target_identity": target_identity,
        "correct": None,
        "seed": 0,
        "model_id": model_id,
        "option_logprobs": None,
        "attempts": None,
        "server_model": None,
    }
    row.update(outcome(row))
    return row


def write_run(
    out: Path,
    rows: list[dict[str, Any]],
    where: list[str],
    *,
    fmt: str,
    files: list[ImportedFile],
    source: str,
    model_id: str,
    not_recovered: Sequence[str],
    consequences: Sequence[str],
    taxonomy: Taxonomy,
    settings: RunSettings | None = None,
    dataset: DatasetProvenance | None = None,
) -> Path:
    """Check the rows as the one responses reader does, then write responses.parquet and run.json.
    `where[i]` names the file and row that gave rows[i] (so a duplicate names both). `settings` and `dataset`:
    the run's own, where the format records them (inspect logs); else what the rows say, with `source`."""
    import pyarrow as pa

    from vignette_bench.eval.runtime.folder import RunFolder

    if not rows:
        raise ImportProblems([f"{source}: no answer rows found"])
    seen: dict[str, int] = {}
    problems = Problems()
    for i, r in enumerate(rows):
        q = r["question_id"]
        if q in seen:
            problems.add(where[i], None, "question", f"the same question as {where[seen[q]]} (answered twice)")
        else:
            seen[q] = i
    if problems.items:
        raise ImportProblems(problems.items)
    columns = {c: [r[c] for r in rows] for c in RESPONSE_COLUMNS}
    try:
        check_columns(columns, source)
    except ResponsesError as e:  # a bug of the importer rather than of the file, but said the same way
        raise ImportProblems(e.problems) from None
    table = pa.Table.from_pydict(columns, schema=RESPONSE_SCHEMA)
    paradigms = tuple(
        p for p in ("factuality", "perception", "stereotype", "decision") if p in set(columns["paradigm"])
    )
    configs = "+".join(sorted(set(columns["config"])))
    record = RunRecord(
        settings=settings
        or RunSettings(source=source, config=configs, model=model_id, seed=0, paradigms=paradigms, orders="rule"),
        template_hash=template_hash(taxonomy),
        model=ModelProvenance(model_id=model_id, adapter=f"import:{fmt}", revision=""),
        dataset=dataset or DatasetProvenance(source=source, config=configs, revision=f"import:{fmt}"),
        versions={"python": sys.version.split()[0]},
        imported=ImportedProvenance(
            format=fmt, files=tuple(files), not_recovered=tuple(not_recovered), consequences=tuple(consequences)
        ),
    )
    folder = RunFolder(out)
    folder.path.mkdir(parents=True, exist_ok=True)
    folder.write_responses(table)
    folder.write_record(record)
    return folder.path
