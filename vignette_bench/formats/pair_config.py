"""`PairConfig`: which pairs of VIGNETTE a load selects and how their images look.

One frozen value for what `vignette.load_dataset`'s keyword arguments and a run's settings both
say: the pair config, the filters, the sample and its seed, the sides' orders, and the pixels
(size, seam, reduced copies or full renders). It says nothing about *where* the pairs come from (the
source) or how they are served (split, streaming, caching): those stay arguments of their own.

This module is the one place a selection field is declared (tests/formats/test_selection_declared_once.py):
`PairFilters` (which pairs a `vignette.PairSpace` keeps) is the part of `PairConfig` the space takes; the
selection record's `filters` is a `PairFilters`; a run's settings give their `PairConfig` through
`RunSettings.pair_config()`; and `vignette run --filter` keys are `PairFilters`' fields
(vignette_bench/formats/vocabulary.py keeps them as a literal for the CLI's fast start, checked against these).

``PairConfig.from_options(**keywords)`` builds one from `load_dataset`'s keyword arguments (a name
for a list of names, numpy integers for ints; as `datasets` builds a BuilderConfig from
``**config_kwargs``) and refuses an unknown option or a bad value with a `VignetteError` naming it
(``sample=0: expected ...``), before anything is read. Names (identities, activities, dimensions, ...)
are checked against the source's taxonomy by the loader's `PairSpace`, which knows it.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import BaseModel, Field, ValidationError, ValidationInfo, field_validator

from vignette_bench.errors import VignetteError
from vignette_bench.formats.base import Format, FormatError, Part

# The loader's vocabulary (docs/FORMATS.md): CONFIGS and the defaults live in vignette_bench/formats/vocabulary.py (standard
# library only, for the CLI parsers), shared by formats, loader and runtime.
from vignette_bench.formats.vocabulary import CONFIGS as CONFIGS
from vignette_bench.formats.vocabulary import DEFAULT_SEAM as DEFAULT_SEAM
from vignette_bench.formats.vocabulary import DEFAULT_SIZE as DEFAULT_SIZE

# Plain data, handed to datasets.load_dataset itself: the renders (WebDataset shards) and the parquet
# configs a source's card declares (the index, the news subset, each pair config's rows without images).
DATA_CONFIGS = ("renders", "index", "news") + tuple(f"{c}_specs" for c in CONFIGS)
GROUPS = ("male", "female", "mixed")  # pair gender; "mixed" is the man-woman pair of the gender dimension
ORDERS: tuple[str, ...] = ("rule", "both", "balanced")
SPLIT = "test"

ConfigName = Literal["identity_contrast", "activity_contrast", "identity_activity_contrast", "portraits"]
Names = tuple[str, ...] | None  # None: no restriction


_EXPECTED = {
    "config": f"one of {', '.join(CONFIGS)}",
    "gender": f"a name or a list of names ({', '.join(GROUPS)}), or None",
    "identity_match": "'all' or 'any'",
    "exclude_near_synonyms": "True or False",
    "sample": "a whole number of pairs >= 1, or None (every pair)",
    "seed": "a whole number >= 0",
    "orders": f"one of {', '.join(ORDERS)}",
    "size": "(width, height) in whole pixels, width >= 2 and height >= 1",
    "seam": "a whole number of pixels, 0 <= seam < width",
    "reduced": "True or False",
}


class PairFilters(BaseModel):
    """Which pairs a `vignette.PairSpace` keeps: combined with AND; None (or the default) restricts nothing."""

    model_config = Part.model_config  # a part of PairConfig (and of the selection record): as strict

    gender: Names = None  # male | female | mixed (the man-woman pairs of the gender dimension)
    dimensions: Names = None
    identities: Names = None
    identity_match: Literal["all", "any"] = "all"  # all: every identity of a pair is listed; any: one is
    activities: Names = None
    time_use: Names = None
    exclude_near_synonyms: bool = False
    representativeness: Names = None

    @classmethod
    def from_options(cls, **options: Any) -> Self:
        """One from keyword arguments as Python callers pass them; an unknown or bad one raises a `VignetteError`
        naming it and the valid ones (the rule `datasets` applies to a BuilderConfig's ``**config_kwargs``)."""
        known = sorted(set(cls.model_fields) - {"schema_version"})
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise VignetteError(f"unknown pair option(s) {unknown}; known: {known}")
        values = {k: _normal(cls.model_fields[k].annotation, v) for k, v in options.items()}
        try:
            return cls.model_validate(values)
        except ValidationError as e:
            raise option_error(e, options) from None

    @classmethod
    def text_options(cls, items: Iterable[tuple[str, str]]) -> dict[str, Any]:
        """`vignette run --filter KEY=VALUE` pairs as keyword arguments of `from_options`, each value read by its
        field's type: names comma-separated, a flag as 1/true/yes; an unknown key raises a `VignetteError`."""
        out: dict[str, Any] = {}
        for key, value in items:
            if key not in FILTER_FIELDS:
                raise VignetteError(f"--filter {key}={value}: unknown key; use one of {list(FILTER_FIELDS)}")
            annotation = cls.model_fields[key].annotation
            if annotation is bool:
                out[key] = value.lower() in ("1", "true", "yes")
            elif annotation == Names:
                out[key] = tuple(v.strip() for v in value.split(",") if v.strip())
            else:
                out[key] = value
        return out

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def filters(self) -> PairFilters:
        """Only the filters (`vignette.PairSpace`'s), of this or of a whole PairConfig."""
        return PairFilters.model_validate({k: getattr(self, k) for k in FILTER_FIELDS})


FILTER_FIELDS = tuple(PairFilters.model_fields)  # the filters' names, in declaration order (`vignette run --filter`)


class PairConfig(Format, PairFilters):
    """Which pairs, and how they look: the filters (`PairFilters`), the sample, the sides' orders and the pixels."""

    SCHEMA_VERSION: ClassVar[int] = 1
    FILE: ClassVar[str] = (
        "no file of its own: a value passed to `vignette.load_dataset(..., pair_config=...)` (or built by it "
        "from its keyword arguments, vignette_bench/loader/load.py); its fields are recorded in the selection record "
        "(`SelectionRecord`) and in a run's settings, which `RunSettings.pair_config()` reads back into one"
    )

    schema_version: int = SCHEMA_VERSION
    config: ConfigName
    sample: Annotated[int, Field(ge=1)] | None = None  # N pairs, seeded and balanced; None: every pair
    seed: Annotated[int, Field(ge=0)] = 0
    orders: Literal["rule", "both", "balanced"] = "rule"
    size: tuple[Annotated[int, Field(ge=2)], Annotated[int, Field(ge=1)]] = DEFAULT_SIZE  # width, height
    seam: Annotated[int, Field(ge=0)] = DEFAULT_SEAM
    reduced: bool = True  # compose from the renders' reduced copies where both fit (other pixels)

    @field_validator("seam")
    @classmethod
    def _seam_below_width(cls, seam: int, info: ValidationInfo) -> int:
        size = info.data.get("size")
        if size is not None and seam >= size[0]:
            raise ValueError(f"seam {seam} is not below the width {size[0]}")
        return seam

    @classmethod
    def migrate(cls, data: dict[str, Any], version: int, file: str) -> dict[str, Any]:
        # Version 0: load_dataset's keyword arguments as a JSON object, before PairConfig existed; same keys.
        if version == 0:
            return dict(data)
        return super().migrate(data, version, file)


def _normal(annotation: Any, value: Any) -> Any:
    """What a Python caller passes, in the types the strict model takes (nothing else is coerced)."""
    if annotation == Names and value is not None:  # a name for a list of names
        if isinstance(value, str):
            return (value,)
        if isinstance(value, Iterable) and not isinstance(value, bytes | dict):
            return tuple(value)
        return value
    if isinstance(value, Iterable) and not isinstance(value, str | bytes | dict):  # size: numpy ints as ints
        return tuple(_whole(v) for v in value)
    return _whole(value)


def _whole(value: Any) -> Any:
    """numpy and other Integral whole numbers as int (bools stay bools: strict int refuses them)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool | int):
        return int(value)
    return value


def option_error(error: ValidationError, options: dict[str, Any]) -> VignetteError:
    """The first problem as ``option=value: expected ...``, naming the keyword argument."""
    first = error.errors()[0]
    option = str(first["loc"][0]) if first["loc"] else "pair_config"
    if option not in options:
        return FormatError("pair_config", option, "missing" if first["type"] == "missing" else first["msg"].lower())
    value = options[option]
    if first["type"] == "value_error":  # our own validators say exactly what is wrong
        reason = str(first["msg"]).removeprefix("Value error, ")
        return VignetteError(f"{option}={value!r}: {reason}; expected {_EXPECTED.get(option, 'a valid value')}")
    expected = _EXPECTED.get(option, "a name or a list of names, or None")
    return VignetteError(f"{option}={value!r}: expected {expected}")
