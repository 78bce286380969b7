"""The original VIGNETTE code's CSV outputs (docs/import.md, "vignette-csv").

Perception ("assumptions") files: filename, descriptor 1, descriptor 2, activity, question_id (the
question's text), response, options (a Python-list string, in the order shown), gender, axis. Stereotype
("socialassumptions") files add taxonomy, term, direction (portraits: no activity). Factuality files have
filename, question_id, descriptor 1, descriptor 2, activity, response, options. Image names are
`{d1}_{a1}--{d2}_{a2}.png` (`{d1}--{d2}.png` for portraits), the left person first. Descriptors carry
the gender word ("old woman"); each is mapped to a taxonomy identity (the paper's neutralisation).
"""

from __future__ import annotations

import ast
import csv
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vignette_bench.eval.importing.core import (
    Answers,
    Identities,
    Person,
    Problems,
    answer_row,
    lookalike,
    match_template,
    norm,
    perception_subtask,
    text_codec,
)
from vignette_bench.taxonomy import Taxonomy

FORMAT = "vignette-csv"
SETTINGS = {"2a": "struggle", "2b": "capability", "3a": "enjoyment", "3b": "dislike"}
_SETTING = re.compile(r"(?<![0-9a-z])(2a|2b|3a|3b)(?![0-9a-z])")
NOT_RECOVERED = (
    "render clusters: image name only (each person's half of the image name stands for one render)",
    "probabilities: none (the original code records the answer only)",
    "option seeds: none (the original code's shuffle is not recorded)",
)


def kind_of(columns: list[str]) -> str | None:
    cols = {c.strip().lower() for c in columns}
    need = {"filename", "descriptor 1", "descriptor 2", "question_id", "response", "options"}
    if not need <= cols:
        return None
    if {"term", "direction"} <= cols:
        return "stereotype"
    if {"gender", "axis"} <= cols:
        return "perception"
    return "factuality"


def _image(name: str, identities: Identities) -> tuple[list[tuple[str, str]], str | None]:
    """[(descriptor, activity), (descriptor, activity)] from an image name, left first; or why not."""
    base = Path(str(name).strip()).name
    stem, dot, ext = base.rpartition(".")
    if not dot or ext.lower() not in ("png", "jpg", "jpeg", "bmp", "webp"):
        return [], f"{name!r} is not an image name ({{d1}}_{{a1}}--{{d2}}_{{a2}}.png)"
    halves = stem.split("--")
    if len(halves) != 2 or not all(halves):
        return [], f"{name!r}: expected two people joined by '--' ({{d1}}_{{a1}}--{{d2}}_{{a2}}.png)"
    people = []
    for half in halves:
        d, _, a = half.partition("_")
        people.append((d.replace("-", " ").strip(), a.replace("-", " ").strip()))
    if bool(people[0][1]) != bool(people[1][1]):
        return [], f"{name!r}: one person has an activity and the other not"
    return people, None


def _options(text: Any) -> list[str] | None:
    try:
        value = ast.literal_eval(str(text))
    except (ValueError, SyntaxError):
        return None
    if not isinstance(value, list | tuple) or len(value) < 2 or not all(isinstance(v, str) for v in value):
        return None
    return [v.strip() for v in value]


def _activity(text: str, known: dict[str, str]) -> str | None:
    return known.get(norm(text.replace("-", " "))) or known.get(norm(text))


def _folder_hint(path: Path, words: set[str]) -> str | None:
    for part in reversed(path.parts[:-1]):
        p = part.strip().lower().replace("-", " ").replace("_", " ")
        if p in words:
            return p
    return None


def _who(
    option: str, descs: list[tuple[Person | None, Any]], pair: tuple[Person, Person], identities: Identities
) -> str:
    """The identity an option names: a row's descriptor (with or without "the"), or a taxonomy form of
    one of the pair; "" for an option that names neither."""
    o = norm(option)
    o = o[4:] if o.startswith("the ") else o
    for person, desc in descs:
        if person is not None and o == norm(str(desc).replace("-", " ")):
            return person.identity
    found = identities.find(o, pair[0].dimension)
    return found.identity if found is not None and found.identity in (pair[0].identity, pair[1].identity) else ""


def _raw_rows(path: Path, encoding: str, shown: str, problems: Problems) -> Iterator[dict[str, str]]:
    """The CSV's rows one at a time (keys lower case), so no copy of the file is held in memory; a CSV the
    csv module cannot read (a field over its limit) is named and ends the rows."""
    with path.open(newline="", encoding=text_codec(encoding)) as f:
        reader = csv.DictReader(f)
        try:
            for r in reader:
                yield {(k or "").strip().lower(): (v if isinstance(v, str) else "") for k, v in r.items()}
        except csv.Error as e:
            problems.add(shown, None, None, f"not a readable CSV (line {reader.line_num}: {e})")


@dataclass(frozen=True)
class _File:
    """What every row of one file is read against: its kind, the taxonomy's words, and what its name and
    folders say (the setting code 2a..3b, the dimension or gender of the folder)."""

    path: Path
    shown: str
    kind: str  # perception | stereotype | factuality
    identities: Identities
    model_id: str
    known: dict[str, str]  # taxonomy activity by normalised name
    terms: dict[str, tuple[str, str, str]]  # trait term by normalised name: (term, direction, dimension)
    dims: set[str]
    folder_dim: str | None
    setting: str | None  # the file name's setting code


@dataclass(frozen=True)
class _Row:
    """One row's pair, options and answer, each checked against the taxonomy."""

    d1: Person
    d2: Person
    left: Person
    right: Person
    acts: list[str]  # the left and right person's activity from the image name ("" for portraits)
    options: list[str]
    choice: str | None
    response: str
    activity: str  # the row's activity column ("" for stereotype rows)


Bad = Callable[[str, str], None]  # names a problem at a column of the current row


def read_file(
    path: Path,
    shown: str,
    taxonomy: Taxonomy,
    identities: Identities,
    model_id: str,
    answers: Answers,
    encoding: str = "utf-8",
) -> int:
    """Add the answers of one CSV to `answers` (problems to `answers.problems`); returns how many.
    The caller has checked that the file is text in `encoding` (core.text_problem)."""
    problems = answers.problems
    kind = _kind(path, shown, encoding, problems)
    if kind is None:
        return 0
    dims = set(taxonomy.dimensions)
    setting = _SETTING.search(path.name.lower())
    f = _File(
        path=path,
        shown=shown,
        kind=kind,
        identities=identities,
        model_id=model_id,
        known={norm(a.name): a.name for a in taxonomy.activities},
        terms={norm(t): (t, d, dim) for t, d, dim in taxonomy.trait_terms},
        dims=dims,
        folder_dim=_folder_hint(path, {d.replace("_", " ") for d in dims}),
        setting=SETTINGS.get(setting.group(1)) if setting else None,
    )
    added = 0
    for i, r in enumerate(_raw_rows(path, encoding, shown, problems), start=2):  # row 1 is the header
        before = len(problems.items)

        def bad(column: str, why: str, i: int = i) -> None:
            problems.add(shown, i, column, why)

        parsed = _parse_row(f, r, bad)
        if len(problems.items) > before or parsed is None:
            continue
        row = _answer(f, r, parsed, bad)
        if row is not None:
            answers.add(row, f"{shown}: row {i}")
            added += 1
    return added


def _kind(path: Path, shown: str, encoding: str, problems: Problems) -> str | None:
    """Which of the original code's files this is, from its header; None (the problem named) if none."""
    try:
        with path.open(newline="", encoding=text_codec(encoding)) as f:
            header = [h.strip().lower() for h in next(csv.reader(f), [])]
    except csv.Error as e:  # a field over the csv module's limit, a NUL byte: not a CSV we can read
        problems.add(shown, None, None, f"not a readable CSV (line 1: {e})")
        return None
    kind = kind_of(header)
    if kind is None:
        shown_header = header if len(str(header)) < 300 else str(header)[:300] + "…"
        problems.add(
            shown,
            None,
            None,
            f"columns {shown_header} are none of the original code's (filename, descriptor 1, descriptor 2, "
            "question_id, response, options, ...)",
        )
    return kind


def _parse_row(f: _File, r: dict[str, str], bad: Bad) -> _Row | None:
    """The row's pair (descriptors and image name agreeing), options, choice and activity; every problem is
    named through `bad`, and None when the pair or the options are missing."""
    identities, known = f.identities, f.known
    axis = (r.get("axis") or "").strip().lower().replace(" ", "_") or (
        f.folder_dim.replace(" ", "_") if f.folder_dim else ""
    )
    if axis and axis not in f.dims:
        bad("axis", f"{axis!r} is not a taxonomy dimension ({sorted(f.dims)})")
        axis = ""
    d1 = identities.find(r.get("descriptor 1"), axis or None)
    d2 = identities.find(r.get("descriptor 2"), axis or None)
    for col, found_d in (("descriptor 1", d1), ("descriptor 2", d2)):
        if found_d is None:
            bad(col, f"{r.get(col)!r} is no identity of the taxonomy" + (f" in dimension {axis!r}" if axis else ""))
    people, why = _image(r.get("filename", ""), identities)
    if why:
        bad("filename", why)
    sides: list[Person] = []
    acts: list[str] = []
    for desc, a in people:
        p = identities.find(desc, axis or None)
        if p is None:
            bad("filename", f"{desc!r} in the image name is no identity of the taxonomy")
            continue
        sides.append(p)
        if a:
            act = _activity(a, known)
            if act is None:
                bad("filename", f"activity {a!r} in the image name is not a taxonomy activity")
            acts.append(act or "")
        else:
            acts.append("")
    if d1 and d2 and len(sides) == 2 and {d1.identity, d2.identity} != {s.identity for s in sides}:
        bad("filename", f"names {[s.identity for s in sides]}, the descriptors {[d1.identity, d2.identity]}")
    options = _options(r.get("options"))
    if options is None:
        bad("options", f"{r.get('options')!r} is not a list of two or more option strings")
    for said, column in [(o, "options") for o in options or []] + [(r.get("response"), "response")]:
        if (why := lookalike(said)) is not None:
            bad(column, why)
            options = None if column == "options" else options
    response = (r.get("response") or "").strip()
    choice: str | None = None
    if options is not None and response:
        match = [o for o in options if norm(o) == norm(response)]
        if not match:
            bad("response", f"{response!r} is not one of the options {options}")
        else:
            choice = match[0]
    activity = ""
    if f.kind != "stereotype":
        activity = _activity(r.get("activity", ""), known) or ""
        if not activity:
            bad("activity", f"{r.get('activity')!r} is not a taxonomy activity")
    if d1 is None or d2 is None or len(sides) != 2 or options is None:
        return None
    return _Row(d1, d2, sides[0], sides[1], acts, options, choice, response, activity)


def _answer(f: _File, r: dict[str, str], p: _Row, bad: Bad) -> dict[str, Any] | None:
    """The response row of one parsed CSV row (the part every kind shares, then the kind's own)."""
    left, right = p.left, p.right
    pair_gender = "mixed" if left.dimension == "gender" else (left.gender or right.gender)
    if not pair_gender or pair_gender == "mixed" and left.dimension != "gender":
        pair_gender = (r.get("gender") or _folder_hint(f.path, {"male", "female"}) or "").strip().lower()
    descs: list[tuple[Person | None, Any]] = [(p.d1, r.get("descriptor 1")), (p.d2, r.get("descriptor 2"))]
    common: dict[str, Any] = dict(
        gender=pair_gender,
        dimension=left.dimension,
        left=left.identity,
        right=right.identity,
        options=p.options,
        choice=p.choice,
        raw=p.response,
        probabilities=None,
        model_id=f.model_id,
    )
    stem = Path(r.get("filename", "").strip()).stem
    key_left, key_right = (f"{FORMAT}/{h}" for h in stem.split("--"))
    common.update(key_left=key_left, key_right=key_right)
    if f.kind == "perception":
        option_identities = [_who(o, descs, (left, right), f.identities) for o in p.options]
        return _perception(f, r, p, bad, option_identities=option_identities, **common)
    if f.kind == "stereotype":
        option_identities = [_who(o, descs, (left, right), f.identities) for o in p.options]
        return _stereotype(f, r, bad, option_identities=option_identities, **common)
    return _factuality(f, r, p, bad, common)


def _perception(f: _File, r: dict[str, str], p: _Row, bad: Bad, **common: Any) -> dict[str, Any] | None:
    """Is one person struggling (capable, enjoying, disliking) at the activity: the subtask from the wording,
    or from the file name's setting code when the wording is the original's own."""
    text, activity, acts = r.get("question_id", ""), p.activity, p.acts
    if acts[0] != activity and acts[1] != activity:
        bad("activity", f"{activity!r} is not in the image name {r.get('filename')!r}")
        return None
    found = perception_subtask(text, activity)
    code = f.setting
    if found is None and code is not None and norm(activity) in norm(text):
        found = (code, 0)  # the setting code says which question; the wording is the original's
    if found is None:
        bad("question_id", f"{text!r} is no perception question about {activity!r}")
        return None
    if code is not None and code != found[0]:
        bad("question_id", f"{text!r} asks {found[0]}, but the file name's setting code says {code}")
        return None
    return answer_row(
        config="identity_contrast" if acts[0] == acts[1] else "identity_activity_contrast",
        paradigm="perception",
        subtask=found[0],
        template_id=f"perception/{found[0]}",
        paraphrase=found[1],
        context=activity,
        activity_left=acts[0],
        activity_right=acts[1],
        **common,
    )


def _stereotype(f: _File, r: dict[str, str], bad: Bad, **common: Any) -> dict[str, Any] | None:
    """Which portrait fits a trait term; the term's direction must be the taxonomy's."""
    text = r.get("question_id", "")
    term = f.terms.get(norm(r.get("term", "")))
    if term is None:
        bad("term", f"{r.get('term')!r} is not a taxonomy trait term")
        return None
    name, direction, tdim = term
    if norm(r.get("direction", "")) not in ("", direction):
        bad("direction", f"{r.get('direction')!r}, but the taxonomy says {name!r} is {direction!r}")
        return None
    k = match_template("stereotype/trait", text, term=name)
    if k is None and norm(name) not in norm(text):
        bad("question_id", f"{text!r} does not ask about the term {name!r}")
        return None
    return answer_row(
        config="portraits",
        paradigm="stereotype",
        subtask=tdim,
        template_id="stereotype/trait",
        paraphrase=k or 0,
        context=name,
        activity_left="",
        activity_right="",
        direction=direction,
        trait_dimension=tdim,
        **common,
    )


def _factuality(f: _File, r: dict[str, str], p: _Row, bad: Bad, common: dict[str, Any]) -> dict[str, Any] | None:
    """What is one person doing: the options are activities, the subject the person the question names."""
    text, activity, acts, options, known = r.get("question_id", ""), p.activity, p.acts, p.options, f.known
    unknown = [o for o in options if _activity(o, known) is None]
    if unknown:
        bad("options", f"{unknown} are not taxonomy activities")
        return None
    subject, target = "left", p.left
    named = [
        (len(norm(desc)), person)
        for desc, person in ((r.get("descriptor 1"), p.d1), (r.get("descriptor 2"), p.d2))
        if norm(desc) and norm(desc) in norm(text)
    ]
    if named:  # the person the question names (the longer descriptor when one contains the other)
        person = max(named, key=lambda x: x[0])[1]
        subject, target = ("left", p.left) if person == p.left else ("right", p.right)
    k = None
    for said in (r.get("descriptor 1"), r.get("descriptor 2")):
        k = k if k is not None else match_template("factuality/what_doing", text, subject=f"the {norm(said)}")
    true_act = acts[0] if subject == "left" else acts[1]
    if true_act and true_act != activity:
        bad("activity", f"{activity!r}, but the image name shows the {subject} person {true_act!r}")
        return None
    if norm(activity) not in [norm(o) for o in options]:
        bad("options", f"{options} do not include the true activity {activity!r}")
        return None
    opts = [_activity(o, known) or o for o in options]
    common = {**common, "options": opts, "choice": _activity(p.choice, known) if p.choice is not None else None}
    return answer_row(
        config="identity_contrast" if acts[0] == acts[1] else "identity_activity_contrast",
        paradigm="factuality",
        subtask="what_doing",
        template_id="factuality/what_doing",
        paraphrase=k or 0,
        context=activity,
        activity_left=acts[0],
        activity_right=acts[1],
        option_identities=[""] * len(opts),
        subject=subject,
        target_identity=target.identity,
        **common,
    )
