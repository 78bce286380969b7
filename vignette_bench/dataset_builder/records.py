"""Render specs and records: keys, prompts, seeds, and validation against the taxonomy.

A *spec* is what is to be rendered (key, prompt, seed); a *record* is what was rendered
(the spec plus the model settings and library versions: vignette_bench/formats/render_record.py), stored as
``<key>.json`` beside the image and, in a source, inside the WebDataset shard. Formats: docs/FORMATS.md.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from vignette_bench.formats.render_index import render_key
from vignette_bench.formats.render_record import RecordError, RenderRecord, read_render_record
from vignette_bench.taxonomy import GENDERS, Taxonomy

Kind = Literal["activity", "portrait"]


def render_prompt(surface_form: str, activity: str = "") -> str:
    if activity:
        return f"A {surface_form} engaged in {activity}, with their face visible."
    return f"A {surface_form}, with their face visible."


def stable_seed(key: str, previous_seed: int | None = None) -> int:
    """A 31-bit seed from the key (sha256, so stable across runs, machines and Python versions).

    A re-render after a failed check chains on the previous seed, so every attempt is
    reproducible from the key and the recorded seed alone.
    """
    text = key if previous_seed is None else f"{key}#{previous_seed}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") & 0x7FFFFFFF


@dataclass(frozen=True)
class RenderSpec:
    key: str
    gender: str
    dimension: str
    identity: str
    surface_form: str
    activity: str  # "" for a portrait
    prompt: str
    seed: int
    variant: int = 0  # which of the cell's k renders (0 = the paper's single render)

    @property
    def kind(self) -> Kind:
        return "activity" if self.activity else "portrait"


def spec_for(taxonomy: Taxonomy, gender: str, identity: str, activity: str = "", variant: int = 0) -> RenderSpec:
    ident = taxonomy.identity(identity)
    form = ident.form(gender)  # type: ignore[arg-type]
    if not form:
        raise KeyError(f"identity {identity!r} is not rendered as {gender!r} (no {gender}_form in identities.csv)")
    if activity:
        taxonomy.activity(activity)
    key = render_key(gender, ident.dimension, identity, activity, variant)
    return RenderSpec(
        key, gender, ident.dimension, identity, form, activity, render_prompt(form, activity), stable_seed(key), variant
    )


def plan_renders(
    taxonomy: Taxonomy,
    genders: Sequence[str] | None = None,
    dimensions: Sequence[str] | None = None,
    identities: Sequence[str] | None = None,
    activities: Sequence[str] | None = None,
    portraits: bool = True,
    renders_per_cell: int = 1,
) -> list[RenderSpec]:
    """Every render to make, in taxonomy order (gender, dimension, identity, activities, portrait).

    ``renders_per_cell`` k > 1 plans k renders (variants 0..k-1, each its own seed) of every
    (identity, activity) cell and portrait, so that the statistics can tell an identity's effect from
    one render's look; k = 1 is the paper's design. Filters are validated so that a typo fails loudly
    instead of planning nothing.
    """
    if renders_per_cell < 1:
        raise ValueError(f"renders_per_cell must be >= 1, got {renders_per_cell}")
    variants = range(renders_per_cell)
    for g in genders or ():
        if g not in GENDERS:
            raise KeyError(f"unknown gender {g!r}; use one of {GENDERS}")
    for d in dimensions or ():
        if d not in taxonomy.dimensions:
            raise KeyError(f"unknown dimension {d!r}; use one of {taxonomy.dimensions}")
    for i in identities or ():
        taxonomy.identity(i)
    for a in activities or ():
        taxonomy.activity(a)
    acts = [a.name for a in taxonomy.activities if activities is None or a.name in activities]
    out: list[RenderSpec] = []
    for g in genders or GENDERS:
        for d in dimensions or taxonomy.dimensions:
            for ident in taxonomy.identities_in(d, g):  # type: ignore[arg-type]
                if identities is not None and ident.name not in identities:
                    continue
                out += [spec_for(taxonomy, g, ident.name, a, v) for a in acts for v in variants]
                if portraits:
                    out += [spec_for(taxonomy, g, ident.name, "", v) for v in variants]
    return out


def plan_order(taxonomy: Taxonomy) -> Callable[[Any], tuple[int, int, int, int, int]]:
    """Sort key giving ``plan_renders`` order for anything with gender/dimension/identity/activity fields."""
    genders = {g: i for i, g in enumerate(GENDERS)}
    dims = {d: i for i, d in enumerate(taxonomy.dimensions)}
    idents = {x.name: i for i, x in enumerate(taxonomy.identities)}
    acts = {a.name: i for i, a in enumerate(taxonomy.activities)}
    big = len(idents) + len(acts)  # unknown names sort last; portraits after activities
    return lambda r: (
        genders.get(r.gender, 2),
        dims.get(r.dimension, big),
        idents.get(r.identity, big),
        acts.get(r.activity, big),
        getattr(r, "variant", 0),
    )


def validate_record(record: RenderRecord, taxonomy: Taxonomy, where: str) -> None:
    """The record must describe a render the taxonomy plans; otherwise say which field is off."""
    if record.variant < 0:
        raise RecordError(f"{where}: key {record.key!r}: variant {record.variant} is negative; fix the record")
    try:
        spec = spec_for(taxonomy, record.gender, record.identity, record.activity, record.variant)
    except KeyError as e:
        raise RecordError(f"{where}: key {record.key!r}: {e.args[0]}; fix the record or the taxonomy") from e
    for name in ("key", "dimension", "surface_form", "prompt"):
        got, want = getattr(record, name), getattr(spec, name)
        if got != want:
            raise RecordError(
                f"{where}: key {record.key!r}: {name} is {got!r} but the taxonomy gives {want!r}; "
                "re-render this key (the taxonomy changed since) or fix the record"
            )
    if record.kind != spec.kind:
        raise RecordError(f"{where}: key {record.key!r}: kind {record.kind!r}, expected {spec.kind!r}")


def read_record(path: Path, taxonomy: Taxonomy | None = None) -> RenderRecord:
    if not path.exists():
        raise RecordError(f"{path}: JSON record missing; re-render this key (render will redo it) or delete its image")
    rec = read_render_record(path)
    if rec.key != path.name[: -len(".json")]:
        raise RecordError(
            f"{path}: record says key {rec.key!r} but the file is named for {path.stem!r}; rename or re-render"
        )
    if taxonomy is not None:
        validate_record(rec, taxonomy, str(path))
    return rec
