"""The run record (RUN_DIR/run.json): which questions a run asked, of which model, about which
images, in which words, with which libraries.

`RunRecord` is typed and versioned so every reader gets the same fields and a bad file is named
with its bad key. Version 1 is the layout the runner always wrote plus `schema_version`; a
run.json without that key (every folder written before it existed) is version 0 and is read
through `migrate`, so old run folders still read. Version 2 adds `settings.orders` (how each pair's
sides were chosen: vignette.PairSpace orders; every older run used the rule's order, so migration sets
"rule") and the optional `planning` (what `--sample auto` computed). RunFolder (folder.py) reads and writes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from vignette_bench.eval.runtime.questions import PARADIGMS, Variants

SCHEMA_VERSION = 2
ORDERS = ("balanced", "both", "rule")  # vignette.PairSpace orders; the runner's default first
DEFAULT_IMAGE_SIZE = (672, 336)  # the composed pair, width x height (the paper's size; vignette.DEFAULT_SIZE)


class RecordError(ValueError):
    """A run record is not valid; the message names the file and the key (dotted: settings.seed)."""

    def __init__(self, file: str, key: str | None, reason: str):
        super().__init__(f"{file}: {key}: {reason}" if key else f"{file}: {reason}")
        self.file, self.key, self.reason = file, key, reason


class _Object:
    """Typed reads from one JSON object; each error names the file and the dotted key."""

    def __init__(self, data: Any, where: str, file: str):
        if not isinstance(data, Mapping):
            raise RecordError(file, where or None, f"expected an object, got {_kind(data)}")
        self.data, self.where, self.file = data, where, file
        self.seen: set[str] = set()

    def key(self, k: str) -> str:
        return f"{self.where}.{k}" if self.where else k

    def fail(self, k: str, reason: str) -> RecordError:
        return RecordError(self.file, self.key(k), reason)

    def get(self, k: str, kind: type | tuple[type, ...], *, required: bool = True, null: bool = False) -> Any:
        """The value of `k` if it has type `kind`; absent (or null where `null`) gives None unless required."""
        self.seen.add(k)
        if k not in self.data:
            if required:
                raise self.fail(k, "missing")
            return None
        value = self.data[k]
        if value is None and null:
            return None
        kinds = kind if isinstance(kind, tuple) else (kind,)
        # bool is an int to Python, never to a reader of this file
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            expected = " or ".join(_name(t) for t in kinds) + (" or null" if null else "")
            raise self.fail(k, f"expected {expected}, got {value!r}")
        return value

    def list_of(self, k: str, kind: type) -> list[Any]:
        values = self.get(k, list)
        for i, v in enumerate(values):
            if not isinstance(v, kind) or (isinstance(v, bool) and kind is not bool):
                raise self.fail(f"{k}[{i}]", f"expected {_name(kind)}, got {v!r}")
        return values

    def rest(self) -> dict[str, Any]:
        """The keys not read: an adapter's or a source's own provenance, kept as given."""
        return {k: v for k, v in self.data.items() if k not in self.seen}

    def done(self) -> None:
        """Refuse keys not read: a typo or a newer writer must not pass silently."""
        unknown = sorted(set(self.data) - self.seen)
        if unknown:
            raise self.fail(unknown[0], "unknown key")


def _kind(value: Any) -> str:
    return "null" if value is None else _name(type(value))


def _name(kind: type) -> str:
    return "object" if issubclass(kind, Mapping) else kind.__name__  # JSON's word for a dict


@dataclass(frozen=True)
class RunSettings:
    """Everything that decides which questions a run asks (checked on resume)."""

    source: str
    config: str
    model: str
    seed: int = 0
    paradigms: tuple[str, ...] = PARADIGMS
    variants: Variants = field(default_factory=Variants)
    sample: int | None = None
    filters: tuple[tuple[str, str], ...] = ()
    image_size: tuple[int, int] = DEFAULT_IMAGE_SIZE
    orders: str = ORDERS[0]  # sides: balanced per identity in a sample (docs/eval.md, "Sides")

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["variants"] = self.variants.as_dict()
        d["paradigms"] = list(self.paradigms)
        d["filters"] = dict(self.filters)
        d["image_size"] = list(self.image_size)
        return d

    @classmethod
    def from_json(cls, data: Any, file: str, where: str = "settings") -> RunSettings:
        o = _Object(data, where, file)
        variants = _Object(o.get("variants", dict), o.key("variants"), file)
        try:
            parsed = Variants(
                tuple(variants.list_of("paraphrase", int)),
                tuple(variants.list_of("option_style", str)),
                tuple(variants.list_of("modality", str)),
            )
        except ValueError as e:  # Variants names the bad value; say where it sits
            raise o.fail("variants", str(e)) from None
        variants.done()
        filters = o.get("filters", dict)
        for k, v in filters.items():
            if not isinstance(v, str):
                raise o.fail(f"filters.{k}", f"expected str, got {v!r}")
        size = o.list_of("image_size", int)
        if len(size) != 2:
            raise o.fail("image_size", f"expected [width, height], got {size!r}")
        orders = o.get("orders", str)
        if orders not in ORDERS:
            raise o.fail("orders", f"expected one of {list(ORDERS)}, got {orders!r}")
        settings = cls(
            source=o.get("source", str),
            config=o.get("config", str),
            model=o.get("model", str),
            seed=o.get("seed", int),
            paradigms=tuple(o.list_of("paradigms", str)),
            variants=parsed,
            sample=o.get("sample", int, null=True),
            filters=tuple(sorted(filters.items())),  # sorted as --filter parses them
            image_size=(size[0], size[1]),
            orders=orders,
        )
        o.done()
        return settings


_MODEL_KEYS = ("model_id", "adapter", "model_revision", "revision")


@dataclass(frozen=True)
class ModelProvenance:
    """What the adapter reported (ModelAdapter.provenance()). The id, revision and adapter are typed;
    an adapter's own settings (mode, dtype, temperature, base_url, ...) are kept as given in `extra`."""

    model_id: str | None = None
    adapter: str | None = None
    model_revision: str | None = None  # the reference and OpenAI-compatible adapters' key
    revision: str | None = None  # the transformers and vLLM adapters' key
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def pinned_revision(self) -> str | None:
        return self.model_revision or self.revision

    def to_json(self) -> dict[str, Any]:
        # a null typed key reads as an absent one (every reader uses .get), so it is left out
        typed = {k: getattr(self, k) for k in _MODEL_KEYS}
        return {**{k: v for k, v in typed.items() if v is not None}, **self.extra}

    @classmethod
    def from_json(cls, data: Any, file: str, where: str = "model") -> ModelProvenance:
        o = _Object(data, where, file)
        typed = {k: o.get(k, str, required=False, null=True) for k in _MODEL_KEYS}
        return cls(**typed, extra=o.rest())


@dataclass(frozen=True)
class DatasetProvenance:
    """Which images were asked about: the source and the digests that pin its renders."""

    source: str
    config: str
    selection: Mapping[str, Any] | None = None  # vignette.load_dataset's record of the selection (filters, sample, ...)
    index_sha256: str | None = None  # of renders/index.parquet, which lists every render's sha256: pins the images
    vignette_sha256: str | None = None  # of the loading module that composed the pairs
    revision: str | None = None  # a revision named by its writer (simulated runs); the runner pins index_sha256
    placeholder: bool | None = None  # None: not recorded (readers then look at the source's index)
    hub_repo: str | None = None  # hf://datasets/ sources: the repo and the commit, when the Hub could be asked
    hub_sha: str | None = None
    hub_sha_error: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)  # a custom PairSource's own revision keys

    @property
    def pinned_revision(self) -> str | None:
        return self.revision or self.index_sha256

    def to_json(self) -> dict[str, Any]:
        d = {k: v for k, v in asdict(self).items() if k != "extra" and v is not None}
        if self.hub_repo is not None:
            d["hub_sha"] = self.hub_sha  # null says the Hub was asked and did not answer (see hub_sha_error)
        return {**d, **self.extra}

    @classmethod
    def from_json(cls, data: Any, file: str, where: str = "dataset") -> DatasetProvenance:
        o = _Object(data, where, file)
        opt = lambda k, kind: o.get(k, kind, required=False, null=True)  # noqa: E731
        return cls(
            source=o.get("source", str),
            config=o.get("config", str),
            selection=opt("selection", dict),
            index_sha256=opt("index_sha256", str),
            vignette_sha256=opt("vignette_sha256", str),
            revision=opt("revision", str),
            placeholder=opt("placeholder", bool),
            hub_repo=opt("hub_repo", str),
            hub_sha=opt("hub_sha", str),
            hub_sha_error=opt("hub_sha_error", str),
            extra=o.rest(),
        )


@dataclass(frozen=True)
class RunRecord:
    """RUN_DIR/run.json. `versions`: python and the libraries that can change answers (run.VERSIONED)."""

    settings: RunSettings
    template_hash: str  # questions.template_hash: a digest of every wording asked
    model: ModelProvenance
    dataset: DatasetProvenance
    versions: Mapping[str, str] = field(default_factory=dict)
    simulated: bool = False  # written by eval/report/simulate.py: no model answered
    planning: Mapping[str, Any] | None = (
        None  # `--sample auto`: the power plan that chose settings.sample (planning.py)
    )
    schema_version: int = SCHEMA_VERSION

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "schema_version": self.schema_version,
            "settings": self.settings.as_dict(),
            "template_hash": self.template_hash,
            "model": self.model.to_json(),
            "dataset": self.dataset.to_json(),
            "versions": dict(self.versions),
        }
        if self.simulated:  # runner records stay as they were
            d["simulated"] = True
        if self.planning is not None:
            d["planning"] = dict(self.planning)
        return d

    @classmethod
    def from_json(cls, data: Any, file: str = "(run record)") -> RunRecord:
        """A record of any known version (older ones through `migrate`); `file` names it in errors."""
        o = _Object(migrate(data, file), "", file)
        versions = o.get("versions", dict)
        for k, v in versions.items():
            if not isinstance(v, str):
                raise o.fail(f"versions.{k}", f"expected str, got {v!r}")
        record = cls(
            settings=RunSettings.from_json(o.get("settings", dict), file),
            template_hash=o.get("template_hash", str),
            model=ModelProvenance.from_json(o.get("model", dict), file),
            dataset=DatasetProvenance.from_json(o.get("dataset", dict), file),
            versions=dict(versions),
            simulated=bool(o.get("simulated", bool, required=False)),
            planning=o.get("planning", dict, required=False, null=True),
            schema_version=o.get("schema_version", int),
        )
        o.done()
        return record


def migrate(data: Any, file: str = "(run record)") -> dict[str, Any]:
    """`data` in the current layout. Version 0 (no schema_version) is the runner's layout without the
    key; simulated runs of that time also lacked versions, settings.variants and settings.image_size.
    Version 1 lacks settings.orders: every run then took the rule's order."""
    o = _Object(data, "", file)
    version = o.get("schema_version", int, required=False)
    version = 0 if version is None else version
    if version > SCHEMA_VERSION:
        raise o.fail(
            "schema_version", f"{version} is newer than this code reads ({SCHEMA_VERSION}); upgrade vignette-bench"
        )
    if version < 0:
        raise o.fail("schema_version", f"{version} is not a version")
    out = dict(data)
    if version == 0:
        settings = out.get("settings")
        if isinstance(settings, Mapping):
            settings = dict(settings)
            settings.setdefault("variants", Variants().as_dict())  # what simulations asked: the default wording
            settings.setdefault("image_size", list(DEFAULT_IMAGE_SIZE))  # what every reader assumed
            out["settings"] = settings
        out.setdefault("versions", {})  # simulated runs recorded none
        out["schema_version"] = version = 1
    if version == 1:
        settings = out.get("settings")
        if isinstance(settings, Mapping):
            out["settings"] = {**settings, "orders": settings.get("orders", "rule")}  # what version-1 runs did
        out["schema_version"] = 2
    return out
