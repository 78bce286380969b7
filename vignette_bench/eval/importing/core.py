"""What every importer shares: matching descriptors to the taxonomy and questions to the templates, the
problem list, and writing the run folder (responses checked by the one responses reader, then run.json)."""

from __future__ import annotations

import codecs
import glob
import hashlib
import os
import re
import shutil
import sys
import unicodedata
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
    """NFKC, lower case, single spaces, no trailing full stop (how two wordings are compared): a fullwidth
    or ligature spelling is the same word; a look-alike from another script is not (`lookalike`)."""
    if text is None:
        return ""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", str(text)).strip().lower()).rstrip(" .?!")


# Letters of other scripts that render like Latin ones (the common part of Unicode's confusables list):
# a Cyrillic "о" in "the оld" looks like the option "the old" but names nobody.
_CONFUSABLE = str.maketrans(
    "аеорсухіјѕԁһӏԛԝАВЕКМНОРСТХІЈЅαβεικνορτυχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxijsdhlqwABEKMHOPCTXIJSaBeiKvopTuxABEZHIKMNOPTYX",
)


def lookalike(text: Any) -> str | None:
    """Why `text` is a look-alike (a letter of another script that renders as a Latin one), or None."""
    t = unicodedata.normalize("NFKC", str(text or ""))
    skeleton = t.translate(_CONFUSABLE)
    latin = any("a" <= c.lower() <= "z" for c in t)
    if skeleton == t or not (latin or skeleton.isascii()):  # all Cyrillic text is another language, not a disguise
        return None
    odd = [c for c in t if c.translate(_CONFUSABLE) != c]
    names = ", ".join(f"{c!r} ({unicodedata.name(c, f'U+{ord(c):04X}')})" for c in dict.fromkeys(odd))
    return (
        f"{str(text)!r} spells {skeleton!r} with {names}, a look-alike of a Latin letter; "
        "write it in plain Latin letters"
    )


def text_problem(path: Path, encoding: str) -> str | None:
    """Why `path` is not text in `encoding` (the first bad byte, its line and offset), read in 1 MiB pieces;
    None when it is. utf-8 accepts a BOM (spreadsheet exports)."""
    codec = text_codec(encoding)
    decoder = codecs.getincrementaldecoder(codec)(errors="strict")
    line, offset = 1, 0
    with path.open("rb") as f:
        head = f.read(4)
        f.seek(0)
        if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) and not codec.startswith("utf-16"):
            return f"is UTF-16 text (it starts with a UTF-16 byte order mark), not {encoding}; drop --encoding"
        while piece := f.read(1 << 20):
            try:
                decoder.decode(piece)
            except UnicodeDecodeError as e:
                at = max(0, min(e.start, len(piece) - 1))
                line += piece[:at].count(b"\n")
                hint = (
                    "if it was saved as Latin-1 or Windows-1252 (Excel on Windows), pass --encoding cp1252; "
                    "otherwise re-save it as UTF-8"
                    if codec == "utf-8-sig"
                    else "name its real encoding with --encoding, or re-save it as UTF-8"
                )
                return f"not {encoding} text: byte 0x{piece[at]:02x} at line {line} (byte {offset + at:,}); {hint}"
            line += piece.count(b"\n")
            offset += len(piece)
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return f"not {encoding} text: it ends inside a character (a truncated file?)"
    return None


def detected(path: Path, encoding: str) -> str:
    """The encoding to read `path` with: the declared one, except that a UTF-16 byte order mark under the
    default utf-8 is taken at its word (a spreadsheet's "Unicode text" export)."""
    if codecs.lookup(encoding).name == "utf-8":
        with path.open("rb") as f:
            if f.read(2) in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
                return "utf-16"
    return encoding


def text_codec(encoding: str) -> str:
    """The codec a reader opens a text file with: utf-8 drops a BOM."""
    return "utf-8-sig" if codecs.lookup(encoding).name == "utf-8" else encoding


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


class Answers:
    """The rows of an import as they are read: each question id is checked against the earlier ones (a
    duplicate names both rows), and every BATCH rows are checked by the one responses reader and made into
    an Arrow table. Rows as Python dicts took ~2.5 KB each (a 1 GiB CSV reached 3 GB in seconds); a batch
    of them is the most held at once, the rest are columns (benchmarks/import_memory.py)."""

    BATCH = 20_000

    def __init__(self, source: str, problems: Problems) -> None:
        self.source = source
        self.problems = problems  # the readers' too: once any row has a problem, no more tables are built
        self._seen: dict[str, str] = {}  # question id -> where it was answered
        self._pending: list[dict[str, Any]] = []
        self._tables: list[Any] = []
        self.count = 0

    def add(self, row: dict[str, Any], where: str) -> None:
        q = row["question_id"]
        first = self._seen.setdefault(q, where)
        if first is not where:
            self.problems.add(where, None, "question", f"the same question as {first} (answered twice)")
        self._pending.append(row)
        self.count += 1
        if len(self._pending) >= self.BATCH:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa

        if not self._pending:
            return
        columns = {c: [r[c] for r in self._pending] for c in RESPONSE_COLUMNS}
        self._pending = []
        try:
            check_columns(columns, self.source)
        except ResponsesError as e:  # the file's values (probabilities) or an importer's bug, said the same way
            self.problems.items.extend(e.problems)
            return
        if not self.problems.items:  # once anything is wrong nothing is written: stop building
            self._tables.append(pa.Table.from_pydict(columns, schema=RESPONSE_SCHEMA))

    def table(self) -> Any:
        """Every answer as one responses table; ImportProblems when any row had a problem."""
        import pyarrow as pa

        self._flush()
        if self.problems.items:
            raise ImportProblems(self.problems.items)
        if not self.count:
            raise ImportProblems([f"{self.source}: no answer rows found"])
        return pa.concat_tables(self._tables)


def write_run(
    out: Path,
    answers: Answers,
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
    `settings` and `dataset`: the run's own, where the format records them (inspect and lmms-eval logs); else
    what the rows say, with `source`."""
    import pyarrow.compute as pc

    table = answers.table()
    present = set(pc.unique(table.column("paradigm")).to_pylist())
    paradigms = tuple(p for p in ("factuality", "perception", "stereotype", "decision") if p in present)
    configs = "+".join(sorted(pc.unique(table.column("config")).to_pylist()))
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
    return _write_whole(out, lambda folder: (folder.responses.write(table), folder.record.write(record)))


def _write_whole(out: Path, write: Any) -> Path:
    """`write(RunFolder)` into a hidden temporary sibling of `out`, renamed to `out` only when whole: a
    killed import leaves no folder a reader takes for a run (only the temporary, which the next import
    into `out` removes once its writer is dead), and a full disk leaves nothing."""
    from vignette_bench.atomic import _fsync_dir, _writer
    from vignette_bench.eval.runtime.folder import RunFolder

    out.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(out)
    tmp = out.with_name(f".{out.name}.{_writer()}.tmp")
    try:
        tmp.mkdir()
        write(RunFolder(tmp))
        if out.is_dir() and not any(out.iterdir()):
            out.rmdir()  # an empty --out, allowed: replaced by the whole folder
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _fsync_dir(out.parent)
    return out


def remove_stale_temporaries(out: Path) -> list[Path]:
    """The temporaries of earlier imports into `out` whose process is gone (killed): removed."""
    from vignette_bench.atomic import _TEMP_NAME, _alive, _host

    removed = []
    for p in out.parent.glob(f".{glob.escape(out.name)}.*.tmp"):
        m = _TEMP_NAME.match(p.name)
        if m is None or m["name"] != out.name or m["host"] != _host() or _alive(int(m["pid"])):
            continue
        shutil.rmtree(p, ignore_errors=True)
        removed.append(p)
    return removed
