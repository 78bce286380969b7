"""The VIGNETTE taxonomy: identities, activities, trait pairs, role questions, near-synonyms.

The CSVs beside this file are the data; this module loads and validates them. A source folder
(local, HTTP or Hub) carries its own copy under ``taxonomy/``; ``load_taxonomy(path)`` accepts
any fsspec path so that the loader and the builder read the same files the same way.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Literal

from vignette_bench.errors import VignetteError
from vignette_bench.remote import read_url

Gender = Literal["male", "female"]
GENDERS: tuple[Gender, ...] = ("male", "female")
DATA_DIR = Path(__file__).parent
TAXONOMY_FILES = (
    "identities.csv",
    "activities.csv",
    "sscm_terms.csv",
    "roles.csv",
    "role_question_templates.csv",
    "near_synonyms.csv",
)
MAX_TAXONOMY_FILE_BYTES = 64 * 1024**2  # a taxonomy file is a few KB: a larger one is not a taxonomy
EXPECTED_ACTIVITIES = 75
EXPECTED_TRAIT_PAIRS = 30
ROLE_DIMENSIONS = ("ability", "sociability", "morality", "agency", "status", "appearance")
TIME_USES = ("necessary", "contracted", "committed", "free")


class TaxonomyError(VignetteError):
    """A taxonomy file is malformed; the message names the file and row."""


def slug(text: str) -> str:
    """A key-safe form of a name: lowercase, runs of other characters become '_'.

    Used in render keys and pair ids, which must not contain '.', '/' or spaces
    (WebDataset splits a member name at its first dot).
    """
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def with_article(noun: str) -> str:
    """'a cook', 'an office clerk' (by first letter; our role nouns have no silent-h or 'uni-' cases)."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


@dataclass(frozen=True)
class Identity:
    dimension: str
    name: str
    male_form: str
    female_form: str
    visible_llm: str
    visible_human: str

    @property
    def visual_representativeness(self) -> str:
        """From the LLM and human labels (yes / maybe / no): ``representative`` when both say yes,
        ``not_representative`` when either says no, else ``ambiguous``. Stricter than the paper's rule
        (appendix A.2: agreement wins, maybe + maybe or yes + maybe -> yes, any no -> no), which calls
        every identity of the published list representative; this keeps the disagreement visible so an
        analysis can check that a finding holds on the identities both judged depictable."""
        labels = {self.visible_llm.strip().lower(), self.visible_human.strip().lower()}
        if "no" in labels:
            return "not_representative"
        return "representative" if labels == {"yes"} else "ambiguous"

    def form(self, gender: Gender) -> str:
        """The words for this identity in a prompt ('old woman'); '' if not rendered in gender."""
        return self.male_form if gender == "male" else self.female_form

    def genders(self) -> tuple[Gender, ...]:
        return tuple(g for g in GENDERS if self.form(g))


@dataclass(frozen=True)
class Activity:
    name: str
    time_use: str


@dataclass(frozen=True)
class TraitPair:
    dimension: str
    high: str
    low: str


@dataclass(frozen=True)
class RoleQuestion:
    activity: str
    role: str
    dimension: str
    question: str


@dataclass(frozen=True)
class SynonymPair:
    dimension: str
    identity_a: str
    identity_b: str
    reason: str


@dataclass(frozen=True)
class Taxonomy:
    identities: tuple[Identity, ...]
    activities: tuple[Activity, ...]
    traits: tuple[TraitPair, ...]
    role_questions: tuple[RoleQuestion, ...]
    near_synonyms: tuple[SynonymPair, ...]

    @cached_property
    def dimensions(self) -> tuple[str, ...]:
        """Dimensions in file order (first appearance)."""
        return tuple(dict.fromkeys(i.dimension for i in self.identities))

    def identities_in(self, dimension: str, gender: Gender | None = None) -> tuple[Identity, ...]:
        """Identities of one dimension in file order; with a gender, only those rendered in it."""
        return tuple(i for i in self.identities if i.dimension == dimension and (gender is None or i.form(gender)))

    def identity(self, name: str) -> Identity:
        for i in self.identities:
            if i.name == name:
                return i
        raise KeyError(_unknown("identity", name, [i.name for i in self.identities]))

    def activity(self, name: str) -> Activity:
        for a in self.activities:
            if a.name == name:
                return a
        raise KeyError(_unknown("activity", name, [a.name for a in self.activities]))

    @cached_property
    def trait_terms(self) -> tuple[tuple[str, str, str], ...]:
        """All 60 terms as (term, direction 'high'|'low', trait dimension)."""
        out: list[tuple[str, str, str]] = []
        for t in self.traits:
            out += [(t.high, "high", t.dimension), (t.low, "low", t.dimension)]
        return tuple(out)

    @cached_property
    def synonym_set(self) -> frozenset[frozenset[str]]:
        return frozenset(frozenset((s.identity_a, s.identity_b)) for s in self.near_synonyms)

    def are_near_synonyms(self, a: str, b: str) -> bool:
        return frozenset((a, b)) in self.synonym_set


def _unknown(kind: str, name: str, valid: Iterable[str]) -> str:
    import difflib

    valid = list(valid)
    close = difflib.get_close_matches(name, valid, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return f"unknown {kind} {name!r}.{hint} Valid: {', '.join(valid)}"


def _read_csv(base: str, name: str, columns: tuple[str, ...]) -> list[dict[str, str]]:
    path = f"{base.rstrip('/')}/{name}"
    try:
        raw = read_url(path, MAX_TAXONOMY_FILE_BYTES)  # deadlines and a byte cap over HTTP, as every read
        text = raw.decode("utf-8-sig")  # a BOM (spreadsheet exports) is not part of the first column's name
    except FileNotFoundError as e:
        raise TaxonomyError(f"{path}: taxonomy file missing; copy it from vignette_bench/taxonomy/") from e
    except UnicodeDecodeError as e:
        raise TaxonomyError(f"{path}: not UTF-8 text ({e}); save it as UTF-8 CSV") from e
    reader = csv.DictReader(io.StringIO(text))
    missing = set(columns) - set(reader.fieldnames or ())
    if missing:
        raise TaxonomyError(f"{path}: missing column(s) {sorted(missing)}; expected {list(columns)}")
    rows = []
    for line, row in enumerate(reader, start=2):
        clean = {k: (row.get(k) or "").strip() for k in columns}
        clean["_where"] = f"{path}, line {line}"
        rows.append(clean)
    return rows


def _require(rows: list[dict[str, str]], *columns: str) -> None:
    for r in rows:
        for c in columns:
            if not r[c]:
                raise TaxonomyError(f"{r['_where']}: empty {c!r}")


def _unique(rows: list[dict[str, str]], key: tuple[str, ...], what: str) -> None:
    seen: dict[tuple[str, ...], str] = {}
    for r in rows:
        k = tuple(r[c] for c in key)
        if k in seen:
            raise TaxonomyError(f"{r['_where']}: duplicate {what} {k} (first at {seen[k]})")
        seen[k] = r["_where"]


REPRESENTATIVENESS = ("representative", "ambiguous", "not_representative")


def load_taxonomy(path: str | Path | None = None) -> Taxonomy:
    """Load and validate the taxonomy from a folder (any fsspec path); default: the packaged copy."""
    base = str(path if path is not None else DATA_DIR)
    ident_rows = _read_csv(
        base, "identities.csv", ("dimension", "identity", "male_form", "female_form", "visible_llm", "visible_human")
    )
    _require(ident_rows, "dimension", "identity")
    _unique(ident_rows, ("identity",), "identity")
    for r in ident_rows:
        if not (r["male_form"] or r["female_form"]):
            raise TaxonomyError(f"{r['_where']}: identity {r['identity']!r} has no male_form and no female_form")
        if slug(r["identity"]) == "" or slug(r["dimension"]) == "":
            raise TaxonomyError(f"{r['_where']}: identity or dimension has no letters or digits")
    slugs = [(r["dimension"], slug(r["identity"])) for r in ident_rows]
    if len(set(slugs)) != len(slugs):
        raise TaxonomyError(f"{base}/identities.csv: two identities share a key slug; rename one")
    identities = tuple(
        Identity(r["dimension"], r["identity"], r["male_form"], r["female_form"], r["visible_llm"], r["visible_human"])
        for r in ident_rows
    )

    act_rows = _read_csv(base, "activities.csv", ("activity", "time_use"))
    _require(act_rows, "activity", "time_use")
    _unique(act_rows, ("activity",), "activity")
    for r in act_rows:
        if r["time_use"] not in TIME_USES:
            raise TaxonomyError(f"{r['_where']}: time_use {r['time_use']!r} not one of {TIME_USES}")
    if len(act_rows) != EXPECTED_ACTIVITIES:
        raise TaxonomyError(f"{base}/activities.csv: {len(act_rows)} activities, expected {EXPECTED_ACTIVITIES}")
    by_slug: dict[str, str] = {}
    for r in act_rows:  # render keys and pair ids use the slug: two activities with one slug would overwrite
        other = by_slug.setdefault(slug(r["activity"]), r["_where"])
        if other != r["_where"]:
            raise TaxonomyError(
                f"{r['_where']}: activity {r['activity']!r} has the same key slug as {other}; rename one"
            )
    activities = tuple(Activity(r["activity"], r["time_use"]) for r in act_rows)
    activity_names = {a.name for a in activities}

    trait_rows = _read_csv(base, "sscm_terms.csv", ("dimension", "high", "low"))
    _require(trait_rows, "dimension", "high", "low")
    terms = [r["high"] for r in trait_rows] + [r["low"] for r in trait_rows]
    if len(set(terms)) != len(terms):
        raise TaxonomyError(f"{base}/sscm_terms.csv: a trait term appears twice")
    if len(trait_rows) != EXPECTED_TRAIT_PAIRS:
        raise TaxonomyError(f"{base}/sscm_terms.csv: {len(trait_rows)} trait pairs, expected {EXPECTED_TRAIT_PAIRS}")
    traits = tuple(TraitPair(r["dimension"], r["high"], r["low"]) for r in trait_rows)

    role_rows = _read_csv(base, "roles.csv", ("activity", "role"))
    _require(role_rows, "activity", "role")
    _unique(role_rows, ("activity",), "role for activity")
    template_rows = _read_csv(base, "role_question_templates.csv", ("dimension", "template"))
    _require(template_rows, "dimension", "template")
    if [r["dimension"] for r in template_rows] != list(ROLE_DIMENSIONS):
        raise TaxonomyError(
            f"{base}/role_question_templates.csv: need one template per dimension in order {ROLE_DIMENSIONS}"
        )
    for r in role_rows:
        if r["activity"] not in activity_names:
            raise TaxonomyError(f"{r['_where']}: {_unknown('activity', r['activity'], activity_names)}")
    if {r["activity"] for r in role_rows} != activity_names:
        missing_roles = sorted(activity_names - {r["activity"] for r in role_rows})
        raise TaxonomyError(f"{base}/roles.csv: no role for {missing_roles}")
    roles = {r["activity"]: r["role"] for r in role_rows}
    for t in template_rows:
        try:
            t["template"].format(role="x", a_role="a x")
        except (KeyError, IndexError, ValueError) as e:
            raise TaxonomyError(
                f"{t['_where']}: template {t['template']!r} uses an unknown or malformed field ({e}); "
                "templates may use {role} and {a_role} only"
            ) from None
    role_questions = tuple(
        RoleQuestion(
            a.name,
            roles[a.name],
            t["dimension"],
            t["template"].format(role=roles[a.name], a_role=with_article(roles[a.name])),
        )
        for a in activities
        for t in template_rows
    )

    syn_rows = _read_csv(base, "near_synonyms.csv", ("dimension", "identity_a", "identity_b", "reason"))
    _require(syn_rows, "dimension", "identity_a", "identity_b")
    by_name = {i.name: i for i in identities}
    for r in syn_rows:
        for c in ("identity_a", "identity_b"):
            if r[c] not in by_name:
                raise TaxonomyError(f"{r['_where']}: {_unknown('identity', r[c], by_name)}")
            if by_name[r[c]].dimension != r["dimension"]:
                raise TaxonomyError(
                    f"{r['_where']}: {r[c]!r} is in dimension {by_name[r[c]].dimension!r}, not {r['dimension']!r}"
                )
    near_synonyms = tuple(SynonymPair(r["dimension"], r["identity_a"], r["identity_b"], r["reason"]) for r in syn_rows)
    return Taxonomy(identities, activities, traits, role_questions, near_synonyms)
