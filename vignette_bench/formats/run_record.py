"""The run record (RUN_DIR/run.json): which questions a run asked, of which model, about which
images, in which words, with which libraries.

`RunRecord` is typed and versioned so every reader gets the same fields and a bad file is named
with its bad key. Version 1 is the layout the runner always wrote plus `schema_version`; a
run.json without that key (every folder written before it existed) is version 0 and is read
through `migrate`, so old run folders still read. Version 2 adds `settings.orders` (how each pair's
sides were chosen: vignette.PairSpace orders; every older run used the rule's order, so migration sets
"rule") and the optional `planning` (what `--sample auto` computed). Version 3 keeps the adapter's
revision under one key, `model.revision` (older records wrote `model_revision` for the reference and
OpenAI-compatible adapters; migration moves it). Version 4 adds the optional `imported`
(answers brought in by `vignette import` from another harness's files: vignette_bench/eval/importing/;
older records have none). RunFolder (vignette_bench/eval/runtime/folder.py) reads and writes it.

`Variants` (which wordings a run asks) lives here too: it is part of the record's settings, and the
question builder (vignette_bench/eval/runtime/questions.py) takes it from here.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    TypeAdapter,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from vignette_bench.errors import VignetteError
from vignette_bench.formats.base import Format, FormatError, Part, parse_json, reject_type, require_in_file
from vignette_bench.formats.pair_config import PairConfig, PairFilters
from vignette_bench.formats.vocabulary import ORDERS as ORDERS  # the runner's default first
from vignette_bench.formats.vocabulary import PARADIGMS as PARADIGMS

# RecordError was the run record's own error; every format now raises FormatError (file and dotted key).
RecordError = FormatError

SCHEMA_VERSION = 4
OPTION_STYLES = ("identity", "position")
MODALITIES = ("image", "text")
PARAPHRASES = (0, 1, 2)
DEFAULT_IMAGE_SIZE = (672, 336)  # the composed pair, width x height (the paper's size; vignette.DEFAULT_SIZE)


@dataclass(frozen=True)
class Variants:
    """Which wordings to ask: paraphrase numbers, option styles and modalities."""

    paraphrases: tuple[int, ...] = (0,)
    option_styles: tuple[str, ...] = ("identity",)
    modalities: tuple[str, ...] = ("image",)

    def __post_init__(self) -> None:
        for name, values, allowed in (
            ("paraphrase", self.paraphrases, PARAPHRASES),
            ("option_style", self.option_styles, OPTION_STYLES),
            ("modality", self.modalities, MODALITIES),
        ):
            bad = [v for v in values if v not in allowed]
            if bad or not values:
                raise ValueError(f"variants: {name} {bad or '(none)'} not in {list(allowed)}")

    @classmethod
    def all(cls) -> Variants:
        return cls(PARAPHRASES, OPTION_STYLES, MODALITIES)

    @classmethod
    def parse(cls, items: Sequence[str]) -> Variants:
        """Parse ['paraphrase=0,1,2', 'option_style=identity,position', 'modality=image,text'] or ['all']."""
        if list(items) == ["all"]:
            return cls.all()
        fields: dict[str, Any] = {}
        keys = {"paraphrase": "paraphrases", "option_style": "option_styles", "modality": "modalities"}
        for item in items:
            key, sep, value = item.partition("=")
            if not sep or key not in keys:
                raise ValueError(f"--variants {item!r}: expected all, or key=v1,v2 with key one of {list(keys)}")
            parts = [v.strip() for v in value.split(",") if v.strip()]
            fields[keys[key]] = tuple(int(v) for v in parts) if key == "paraphrase" else tuple(parts)
        return cls(**fields)

    def as_dict(self) -> dict[str, list]:
        return {
            "paraphrase": list(self.paraphrases),
            "option_style": list(self.option_styles),
            "modality": list(self.modalities),
        }


class VariantsJSON(Part):
    """`settings.variants` as written: each list names the values asked (non-empty)."""

    paraphrase: tuple[int, ...] = Field(description=f"paraphrase numbers, of {list(PARAPHRASES)}")
    option_style: tuple[str, ...] = Field(description=f"option styles, of {list(OPTION_STYLES)}")
    modality: tuple[str, ...] = Field(description=f"modalities, of {list(MODALITIES)}")


def _variants(value: Any) -> Variants:
    if isinstance(value, Variants):
        return value
    parsed = VariantsJSON.model_validate_json(json.dumps(value))  # a ValidationError here names the key inside variants
    return Variants(parsed.paraphrase, parsed.option_style, parsed.modality)  # ValueError names a bad value


def _filters(value: Any) -> tuple[tuple[str, str], ...]:
    if isinstance(value, tuple):  # built in Python: already (key, value) pairs
        return tuple(sorted((str(k), str(v)) for k, v in value))
    if not isinstance(value, Mapping):
        reject_type("object", value)
    return tuple(sorted(_STR_DICT.validate_json(json.dumps(value)).items()))  # sorted as --filter parses


def parse_filters(items: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """`--filter KEY=VALUE` items as `RunSettings.filters` (sorted key, value pairs; `pair_config` reads the values)."""
    out = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise VignetteError(f"--filter {item!r}: expected key=value, e.g. dimensions=religion")
        out.append((key.strip(), value.strip()))
    return tuple(sorted(out))


_STR_DICT = TypeAdapter(dict[str, str], config=ConfigDict(strict=True))


def _image_size(value: Any) -> tuple[int, int]:
    ok = isinstance(value, list | tuple) and len(value) == 2
    if not ok or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ValueError(f"expected [width, height], got {list(value) if isinstance(value, tuple) else value!r}")
    return (value[0], value[1])


def _tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value  # Python callers may pass a list


VariantsField = Annotated[
    Variants,
    PlainValidator(_variants),
    PlainSerializer(lambda v: v.as_dict()),
    WithJsonSchema(VariantsJSON.model_json_schema()),
]
FiltersField = Annotated[
    tuple[tuple[str, str], ...],
    PlainValidator(_filters),
    PlainSerializer(lambda f: dict(f)),
    WithJsonSchema({"type": "object", "additionalProperties": {"type": "string"}}),
]
ImageSize = Annotated[
    tuple[int, int],
    PlainValidator(_image_size),
    PlainSerializer(lambda s: list(s)),
    WithJsonSchema({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2}),
]


_SETTINGS_KEYS = (
    "source",
    "config",
    "model",
    "seed",
    "paradigms",
    "variants",
    "sample",
    "filters",
    "image_size",
    "orders",
)


class RunSettings(Part):
    """Everything that decides which questions a run asks (checked on resume)."""

    # the defaults are for Python callers; the file names every key
    model_config = {**Part.model_config, "json_schema_extra": {"required": list(_SETTINGS_KEYS)}}

    source: str = Field(description="Hub dataset repo, local folder or base URL of the renders")
    config: str = Field(description="the pair config asked about")
    model: str = Field(description="the model spec given to `vignette run --model`")
    seed: int = Field(default=0, description="the run seed (option orders, sampling)")
    paradigms: Annotated[tuple[str, ...], BeforeValidator(_tuple)] = Field(
        default=PARADIGMS, description=f"the paradigms asked, of {list(PARADIGMS)}"
    )
    variants: VariantsField = Field(default_factory=Variants, description="the wordings asked")
    sample: int | None = Field(default=None, description="pairs sampled from the selection; null: every pair")
    filters: FiltersField = Field(default=(), description="`--filter` key=value pairs (the loader's filters)")
    image_size: ImageSize = Field(default=DEFAULT_IMAGE_SIZE, description="the composed pair, [width, height]")
    orders: str = Field(
        default="balanced",
        description="how each pair's sides were chosen (vignette.PairSpace orders; docs/eval.md, Sides)",
        json_schema_extra={"enum": list(ORDERS)},
    )

    @field_validator("orders")
    @classmethod
    def _known_order(cls, value: str) -> str:
        if value not in ORDERS:
            raise ValueError(f"expected one of {list(ORDERS)}, got {value!r}")
        return value

    @model_validator(mode="before")
    @classmethod
    def _every_key_in_file(cls, data: Any, info: ValidationInfo) -> Any:
        # the defaults are for Python callers (a new run); a file names every setting
        return require_in_file(data, info, cls.model_fields, cls.__name__)

    def as_dict(self) -> dict[str, Any]:
        return self.to_json()

    def pair_config(self) -> PairConfig:
        """The loader's `PairConfig` of this run (its one definition of a selection): the config, the `--filter`
        pairs read by their fields' types, the sample and its seed, the orders, and `image_size` as its `size`.
        An unknown filter key or a bad value raises a `VignetteError` naming it."""
        return PairConfig.from_options(
            config=self.config,
            sample=self.sample,
            seed=self.seed,
            orders=self.orders,
            size=self.image_size,
            **PairFilters.text_options(self.filters),
        )


class ModelProvenance(Part):
    """What the adapter reported (ModelAdapter.provenance()). The id, revision and adapter are typed;
    an adapter's own settings (mode, dtype, temperature, base_url, ...) are kept as given in `extra`."""

    model_config = {**Part.model_config, "extra": "allow"}
    OWN_KEYS: ClassVar[str] = "the adapter's own settings (mode, dtype, temperature, base_url, ...), as given"

    model_id: str | None = Field(default=None, description="the model's id (Hub id, or the server's model name)")
    adapter: str | None = Field(default=None, description="the adapter that answered (`transformers`, `openai`, ...)")
    revision: str | None = Field(default=None, description='the model revision the adapter pinned (`""`: none)')

    def __init__(
        self,
        *,
        model_id: str | None = None,
        adapter: str | None = None,
        revision: str | None = None,
        model_revision: str | None = None,  # the older name of `revision` (some adapters' provenance)
        extra: Mapping[str, Any] | None = None,  # the adapter's own keys
        **own: Any,
    ) -> None:
        if revision is None:
            revision = model_revision
        typed = {"model_id": model_id, "adapter": adapter, "revision": revision}
        super().__init__(**{**dict(extra or {}), **own, **typed})

    @classmethod
    def from_adapter(cls, provenance: Mapping[str, Any], file: str, where: str = "model") -> ModelProvenance:
        """An adapter's provenance(): some adapters name the revision `model_revision`; it is `revision` here."""
        return cls.from_json(migrate_model(provenance), file, where)

    @property
    def extra(self) -> dict[str, Any]:
        return dict(self.model_extra or {})

    @property
    def model_revision(self) -> str | None:
        """The revision (version-2 records' name for it, kept for readers)."""
        return self.revision

    @property
    def pinned_revision(self) -> str | None:
        return self.revision

    def to_json(self) -> dict[str, Any]:
        # a null typed key reads as an absent one, so it is left out
        return {k: v for k, v in super().to_json().items() if v is not None or k in self.extra}


class DatasetProvenance(Part):
    """Which images were asked about: the source and the digests that pin its renders. A custom
    PairSource's own revision keys are kept as given in `extra`."""

    model_config = {**Part.model_config, "extra": "allow"}

    source: str = Field(description="the source asked about")
    config: str = Field(description="the pair config")
    selection: dict[str, Any] | None = Field(
        default=None, description="vignette.load_dataset's record of the selection (filters, sample, orders, ...)"
    )
    index_sha256: str | None = Field(
        default=None, description="sha256 of renders/index.parquet, which lists every render's sha256: pins the images"
    )
    vignette_sha256: str | None = Field(
        default=None, description="sha256 of the loading module that composed the pairs"
    )
    revision: str | None = Field(
        default=None, description="a revision named by its writer (simulated runs); the runner pins index_sha256"
    )
    placeholder: bool | None = Field(
        default=None,
        description="whether the renders are drawn placeholders; null: not recorded (read the source's index)",
    )
    hub_repo: str | None = Field(default=None, description="hf://datasets/ sources: the repo")
    hub_sha: str | None = Field(
        default=None, description="hf://datasets/ sources: the commit; null when the Hub did not answer"
    )
    hub_sha_error: str | None = Field(default=None, description="why the Hub could not be asked for the commit")

    @model_validator(mode="before")
    @classmethod
    def _unpack_extra(cls, data: Any) -> Any:
        return _unpack_extra(data)

    @property
    def extra(self) -> dict[str, Any]:
        return dict(self.model_extra or {})

    @property
    def pinned_revision(self) -> str | None:
        return self.revision or self.index_sha256

    def to_json(self) -> dict[str, Any]:
        d = super().to_json()
        out = {k: v for k, v in d.items() if v is not None or k in self.extra}
        if self.hub_repo is not None:
            out["hub_sha"] = self.hub_sha  # null says the Hub was asked and did not answer (see hub_sha_error)
        return out


def _unpack_extra(data: Any) -> Any:
    """Python callers pass an adapter's or a source's own keys as `extra={...}`; the file has them flat."""
    if isinstance(data, Mapping) and isinstance(data.get("extra"), Mapping):
        data = dict(data)
        data.update({k: v for k, v in data.pop("extra").items() if k not in data})
    return data


class ImportedFile(Part):
    """One file `vignette import` read."""

    path: str = Field(description="the file as given (relative to the folder imported, when one was given)")
    sha256: str = Field(description="sha256 of the file's bytes")
    rows: int = Field(description="answer rows read from it")


class ImportedProvenance(Part):
    """`vignette import` (vignette_bench/eval/importing/): where answers collected elsewhere came from."""

    format: str = Field(description="the source format: `vignette-csv` (the original VIGNETTE code) or `table`")
    files: Annotated[tuple[ImportedFile, ...], BeforeValidator(_tuple)] = Field(
        description="every file read, with its sha256"
    )
    not_recovered: Annotated[tuple[str, ...], BeforeValidator(_tuple)] = Field(
        default=(), description='what the format cannot say, e.g. "probabilities: none", "sides: unknown"'
    )
    consequences: Annotated[tuple[str, ...], BeforeValidator(_tuple)] = Field(
        default=(), description="what that means for the numbers (the report's notes repeat these)"
    )


class RunRecord(Format):
    """RUN_DIR/run.json. `versions`: python and the libraries that can change answers (run.VERSIONED)."""

    model_config = {
        **Format.model_config,
        "json_schema_extra": {"required": ["settings", "template_hash", "model", "dataset", "versions"]},
    }
    SCHEMA_VERSION: ClassVar[int] = SCHEMA_VERSION
    FILE: ClassVar[str] = "RUN_DIR/run.json"
    WRITER: ClassVar[str] = (
        "`vignette run` (vignette_bench/eval/runtime/run.py), vignette_bench/eval/simulate.py, "
        "`vignette import` (vignette_bench/eval/importing/core.py); RunFolder writes it"
    )
    READER: ClassVar[str] = (
        "RunFolder.record.read (vignette_bench/eval/runtime/folder.py); vignette_bench/eval/runs.py load_run"
    )

    schema_version: int = Field(default=SCHEMA_VERSION, description="this layout's version")
    settings: RunSettings = Field(description="everything that decides which questions a run asks")
    template_hash: str = Field(description="questions.template_hash: a digest of every wording asked")
    model: ModelProvenance = Field(description="the adapter's provenance (model_id, adapter, revision, its own keys)")
    dataset: DatasetProvenance = Field(description="which images were asked about, and what pins them")
    versions: dict[str, str] = Field(default_factory=dict, description="python and library versions")
    simulated: bool = Field(
        default=False,
        description="written by vignette_bench/eval/simulate.py: no model answered (only when true)",
    )
    planning: dict[str, Any] | None = Field(
        default=None,
        description="`--sample auto` only: the power plan that chose settings.sample (vignette_bench/eval/runtime/planning.py)",
    )
    imported: ImportedProvenance | None = Field(
        default=None,
        description="`vignette import` only: the source format, its files and sha256, what could not be recovered",
    )

    @classmethod
    def from_json(cls, data: str | bytes | Mapping[str, Any], file: str = "(run record)") -> RunRecord:
        """A record of any known version (older ones through `migrate`); `file` names it in errors."""
        return super().from_json(data, file)

    @model_validator(mode="before")
    @classmethod
    def _versions_in_file(cls, data: Any, info: ValidationInfo) -> Any:
        return require_in_file(data, info, ("versions",), cls.__name__)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "schema_version": self.schema_version,
            "settings": self.settings.to_json(),
            "template_hash": self.template_hash,
            "model": self.model.to_json(),
            "dataset": self.dataset.to_json(),
            "versions": dict(self.versions),
        }
        if self.simulated:  # runner records stay as they were
            d["simulated"] = True
        if self.planning is not None:
            d["planning"] = dict(self.planning)
        if self.imported is not None:
            d["imported"] = self.imported.to_json()
        return d

    @classmethod
    def migrate(cls, data: dict[str, Any], version: int, file: str) -> dict[str, Any]:
        """Version 0 (no schema_version) is the runner's layout without the key; simulated runs of that
        time also lacked versions, settings.variants and settings.image_size. Version 1 lacks
        settings.orders: every run then took the rule's order. Version 2 may name the model's revision
        `model_revision`. Version 3 has no `imported` (nothing was imported then): it reads as is."""
        out = copy.deepcopy(dict(data))  # the caller's data is left alone
        if version == 0:
            settings = out.get("settings")
            if isinstance(settings, dict):
                settings.setdefault("variants", Variants().as_dict())  # what simulations asked: the default wording
                settings.setdefault("image_size", list(DEFAULT_IMAGE_SIZE))  # what every reader assumed
            out.setdefault("versions", {})  # simulated runs recorded none
            version = 1
        if version == 1:
            settings = out.get("settings")
            if isinstance(settings, dict):
                settings.setdefault("orders", "rule")  # what version-1 runs did
            version = 2
        if version == 2:
            if isinstance(out.get("model"), Mapping):
                out["model"] = migrate_model(out["model"])
            version = 3
        if version == 3:
            version = 4  # `imported` is optional: a version-3 record had none
        out["schema_version"] = version
        return out


def migrate_model(model: Mapping[str, Any]) -> dict[str, Any]:
    """The model provenance with `model_revision` (version 2's second name for it) as `revision`."""
    out = dict(model)
    if "model_revision" in out:
        old = out.pop("model_revision")
        if out.get("revision") is None:
            out["revision"] = old
    return out


def migrate(data: Any, file: str = "(run record)") -> dict[str, Any]:
    """`data` (a run.json of any known version) in the current layout, not yet validated."""
    return RunRecord.upgrade(data, file)


def read_run_record(path: Path) -> RunRecord:
    """A run.json, migrated to the current version; FormatError names the file and the bad key."""
    return RunRecord.from_json(Path(path).read_bytes(), str(path))


def run_record_is_current(path: Path) -> tuple[RunRecord, bool]:
    """The record, and whether the file already holds the current version (`vignette migrate` rewrites it if not)."""
    data = parse_json(Path(path).read_bytes(), str(path))
    record = RunRecord.from_json(data, str(path))
    return record, isinstance(data, dict) and data.get("schema_version") == record.schema_version
