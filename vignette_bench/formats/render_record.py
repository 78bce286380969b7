"""The render record: everything needed to reproduce one render (key, prompt, seed, model settings, library
versions), stored as ``<key>.json`` beside the image and, in a published source, as the JSON member beside each
image of a WebDataset shard (renders/shards/*.tar), where shard adds how the image was encoded
(`format`, `quality`, `image_sha256`; readers here keep the record's own keys and leave those to shard).

The file has never carried `schema_version`: version 0 is the current layout, written as it always was
(keys sorted, UTF-8 kept). `variant` was added after records were first published; an older record reads it
as 0. Errors keep the builder's wording: the file, the key and the fix (re-render this key).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from vignette_bench.errors import VignetteError
from vignette_bench.formats.base import Format


class RecordError(VignetteError):
    """A render record or image is unusable; the message names the file, the key and the fix."""


# Fields added after records were first published, with the value an older record means.
_ADDED_LATER: dict[str, Any] = {"variant": 0}
# What each field must be in the file (a float may be written as an int: it is kept as written).
_JSON_TYPES: dict[str, tuple[type, ...]] = {"int": (int,), "float": (int, float), "str": (str,), "bool": (bool,)}


class RenderRecord(Format):
    """Everything needed to reproduce one render. Optional model fields are "" rather than null so that every
    record has the same types: datasets' WebDataset builder infers the columns from the first samples."""

    SCHEMA_VERSION: ClassVar[int] = 1
    WRITES_VERSION: ClassVar[bool] = False
    FILE: ClassVar[str] = "RENDERS/<key>.json (and the JSON member beside each image in renders/shards/*.tar)"
    WRITER: ClassVar[str] = (
        "`vignette build render` (vignette_bench/dataset_builder/render.py), the placeholder sample and "
        "`vignette build photos`; `vignette build shard` copies it into the shard"
    )
    READER: ClassVar[str] = (
        "vignette_bench/formats/render_record.py read_render_record and RenderRecord.from_json (a shard's "
        "member): render's resume, check, shard, verify"
    )

    schema_version: int = Field(default=1, exclude=True, description="not written: version 0 is version 1")
    key: str = Field(description="the render key (gender-dimension-identity[-activity][-vN])")
    gender: str = Field(description="the person's gender")
    dimension: str = Field(description="the identity's dimension")
    identity: str = Field(description="the taxonomy identity")
    surface_form: str = Field(description="the words the prompt uses for the identity")
    activity: str = Field(description='the activity; "" for a portrait')
    kind: str = Field(description="activity | portrait")
    prompt: str = Field(description="the text-to-image prompt")
    seed: int = Field(description="the generator seed (stable_seed of the key)")
    model_id: str = Field(description="the text-to-image model")
    model_revision: str = Field(description="its revision")
    scheduler: str = Field(description="the scheduler")
    steps: int = Field(description="inference steps")
    guidance: float | int = Field(description="guidance scale, as written")
    width: int = Field(description="image width (px)")
    height: int = Field(description="image height (px)")
    dtype: str = Field(description="the pipeline's dtype")
    max_sequence_length: int = Field(
        default=0, description="text-encoder length passed to the pipeline; 0 = its default"
    )
    versions: dict[str, str] = Field(default_factory=dict, description="library versions")
    placeholder: bool = Field(default=False, description="a drawn placeholder, not a generated image")
    variant: int = Field(default=0, description="which of the cell's k renders (records before variants: 0)")

    @classmethod
    def from_spec(cls, spec: Any, **settings: Any) -> RenderRecord:
        """The record of a render spec (vignette_bench/dataset_builder/records.py RenderSpec) made with these model settings."""
        return cls(
            key=spec.key,
            gender=spec.gender,
            dimension=spec.dimension,
            identity=spec.identity,
            surface_form=spec.surface_form,
            activity=spec.activity,
            kind=spec.kind,
            prompt=spec.prompt,
            seed=spec.seed,
            variant=spec.variant,
            **settings,
        )

    def record_json(self) -> dict[str, Any]:
        """The record's keys and values as written (no schema_version)."""
        return self.model_dump()

    def text(self) -> str:
        """The record as written: keys sorted, UTF-8 kept."""
        return json.dumps(self.record_json(), ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_json(cls, data: str | bytes | Any, file: str) -> RenderRecord:
        """Parse and type-check a record (keys this format does not know, such as a shard's encoding, are
        left to their reader); ``file`` names the file in any error."""
        try:
            obj = json.loads(data) if isinstance(data, str | bytes) else data
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise RecordError(f"{file}: malformed JSON record ({e}); delete it and re-render this key") from e
        if not isinstance(obj, dict):
            raise RecordError(f"{file}: record is not a JSON object; delete it and re-render this key")
        expected = {name: f for name, f in cls.model_fields.items() if name != "schema_version"}
        obj = {**_ADDED_LATER, **obj}
        missing = sorted(set(expected) - set(obj))
        if missing:
            raise RecordError(
                f"{file}: record lacks field(s) {missing}; re-render this key (its record predates the format)"
            )
        for name in expected:
            kind = _TYPE_OF[name]
            value = obj[name]
            want = _JSON_TYPES.get(kind, (dict,))
            if not isinstance(value, want) or (int in want and bool not in want and isinstance(value, bool)):
                raise RecordError(f"{file}: field {name!r} is {value!r}, expected {kind}; fix or re-render this key")
        try:
            return cls(**{k: obj[k] for k in expected})
        except ValueError as e:  # a versions value that is not a string
            raise RecordError(f"{file}: {e}; fix or re-render this key") from None


# The type each field was declared with, in the words of the errors above.
_TYPE_OF: dict[str, str] = {
    **{n: "str" for n, f in RenderRecord.model_fields.items() if f.annotation is str},
    **{n: "int" for n, f in RenderRecord.model_fields.items() if f.annotation is int},
    "guidance": "float",
    "placeholder": "bool",
    "versions": "dict[str, str]",
}


def read_render_record(path: Path) -> RenderRecord:
    """One ``<key>.json``; RecordError names the file and the fix."""
    return RenderRecord.from_json(Path(path).read_bytes(), str(path))


def read_shard_member(text: bytes, where: str) -> tuple[RenderRecord, Any, Any]:
    """A shard's JSON member: the record, and the `image_sha256` and `quality` shard wrote beside it (None when
    absent; their types are shard's to check)."""
    record = RenderRecord.from_json(text, where)
    extra = json.loads(text)
    return record, extra.get("image_sha256"), extra.get("quality")


def write_render_record(path: Path, record: RenderRecord) -> Path:
    path.write_text(record.text())
    return path
