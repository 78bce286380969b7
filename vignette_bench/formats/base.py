"""`Format`: the typed, versioned shape of one JSON file (or one JSON value inside a file).

Built on pydantic: the class is the schema (the JSON Schema in docs/FORMATS.md is generated from it),
unknown keys are refused (a typo or a newer writer must not pass silently), and values are checked
strictly as JSON types (``"3"`` is not an int, ``true`` is not a number). A reader calls
``Cls.from_json(data, file)``: the data is migrated from whatever older `schema_version` it carries
to the current one, then validated; every failure is a `FormatError` naming the file and the dotted
key (``run.json: settings.seed: expected int, got 'five'``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo
from pydantic_core import InitErrorDetails

from vignette_bench.errors import VignetteError

F = TypeVar("F", bound="Format")

# JSON nested deeper than this is not a record of ours; refusing it early keeps a hostile file from
# ending in a RecursionError inside the parser or the validator.
MAX_DEPTH = 64


class FormatError(VignetteError):
    """A file does not match its format; the message names the file and the dotted key."""

    def __init__(self, file: str, key: str | None, reason: str):
        super().__init__(f"{file}: {key}: {reason}" if key else f"{file}: {reason}")
        self.file, self.key, self.reason = file, key, reason


class Format(BaseModel):
    """Base of every cross-stage record. Subclasses set `SCHEMA_VERSION` and override `migrate`."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, protected_namespaces=())

    SCHEMA_VERSION: ClassVar[int] = 1
    # What the file is called and who writes/reads it, for docs/FORMATS.md.
    FILE: ClassVar[str] = ""
    WRITER: ClassVar[str] = ""  # who writes it (module or command)
    READER: ClassVar[str] = ""  # the one reader
    # False for a file that has never carried `schema_version` (version 0 is the current version): its writer
    # leaves the key out, so the file stays byte for byte what it always was.
    WRITES_VERSION: ClassVar[bool] = True

    schema_version: int

    @classmethod
    def migrate(cls, data: dict[str, Any], version: int, file: str) -> dict[str, Any]:
        """`data`, written at `version` (< SCHEMA_VERSION), in the current layout. Override per format; a file
        that never carries the key (WRITES_VERSION false) is version 0, the current layout, unless it says so."""
        if not cls.WRITES_VERSION and version == 0:
            return dict(data)
        raise FormatError(
            file, "schema_version", f"version {version} cannot be read; this reader knows {cls.SCHEMA_VERSION}"
        )

    @classmethod
    def from_json(cls: type[F], data: str | bytes | Mapping[str, Any], file: str) -> F:
        """Parse (when given text), migrate and validate one record."""
        obj = cls.upgrade(parse_json(data, file) if isinstance(data, str | bytes) else data, file)
        try:
            # JSON mode: arrays validate as tuples, and strictness follows JSON's own types.
            return cls.model_validate_json(json.dumps(obj, allow_nan=False))
        except ValueError as e:  # ValidationError is a ValueError; so is a NaN json.dumps refuses
            raise format_error(e, file) from None

    @classmethod
    def upgrade(cls, data: Any, file: str) -> dict[str, Any]:
        """`data` (a parsed record of any known version) migrated to the current layout, not yet validated;
        the caller's data is left alone."""
        if not isinstance(data, Mapping):
            raise FormatError(file, None, f"expected a JSON object, got {type(data).__name__}")
        check_depth(data, file)
        obj = dict(data)
        version = obj.get("schema_version", 0)  # files written before versioning are version 0
        if not isinstance(version, int) or isinstance(version, bool) or version < 0:
            raise FormatError(file, "schema_version", f"expected a non-negative integer, got {version!r}")
        if version > cls.SCHEMA_VERSION:
            raise FormatError(
                file,
                "schema_version",
                f"version {version} is newer than this code reads ({cls.SCHEMA_VERSION}): it was written by a newer "
                "vignette; upgrade vignette-bench",
            )
        if version < cls.SCHEMA_VERSION:
            obj = cls.migrate(obj, version, file)
            obj["schema_version"] = cls.SCHEMA_VERSION
        return obj

    def to_json(self) -> dict[str, Any]:
        """The record as JSON values (tuples become lists), keys in declaration order."""
        return self.model_dump(mode="json")

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2, allow_nan=False) + "\n"

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        return cls.model_json_schema(mode="serialization")


def read_capped(path: Path, max_bytes: int) -> bytes:
    """At most `max_bytes` of a file; OSError(EFBIG) when there is more (a device or a file grown since a stat)."""
    with open(path, "rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise OSError(27, f"over the cap of {max_bytes:,} bytes")  # errno.EFBIG
    return data


def parse_json(text: str | bytes, file: str) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        raise FormatError(file, None, f"JSON nested more than {MAX_DEPTH} levels deep") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FormatError(file, None, f"not valid JSON ({e})") from None


def check_depth(obj: Any, file: str) -> None:
    """Refuse data nested deeper than MAX_DEPTH (iteratively: a recursive check would itself overflow)."""
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise FormatError(file, None, f"JSON nested more than {MAX_DEPTH} levels deep")
        if isinstance(value, Mapping):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list | tuple):
            stack.extend((v, depth + 1) for v in value)


# pydantic's error types, in the words of a reader of a JSON file
_EXPECTED = {
    "int_type": "int",
    "int_parsing": "int",
    "int_from_float": "int",
    "string_type": "str",
    "bool_type": "bool",
    "bool_parsing": "bool",
    "float_type": "number",
    "float_parsing": "number",
    "dict_type": "object",
    "model_type": "object",
    "model_attributes_type": "object",
    "dataclass_type": "object",
    "list_type": "list",
    "tuple_type": "list",
}


def reject_type(expected: str, value: Any) -> None:
    """Raise the error a validator gives for a value of the wrong JSON type (inside a PlainValidator)."""
    raise ValueError(f"expected {expected}, got {value!r}")


def _reason(error: Any) -> str:
    kind, value = error["type"], error.get("input")
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "missing"
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {value!r}"
    if kind == "literal_error":
        return f"expected one of {error.get('ctx', {}).get('expected', '')}, got {value!r}"
    msg = str(error["msg"])
    if kind == "value_error":
        msg = msg.removeprefix("Value error, ")
        return msg[:1].lower() + msg[1:]
    return msg.lower()


def format_error(error: ValueError, file: str) -> FormatError:
    """The first problem of a pydantic ValidationError as a FormatError with its dotted key."""
    if not isinstance(error, ValidationError):
        return FormatError(file, None, str(error))
    first = error.errors()[0]
    key = ".".join(str(p) if isinstance(p, str) else f"[{p}]" for p in first["loc"]).replace(".[", "[")
    more = len(error.errors()) - 1
    return FormatError(file, key or None, _reason(first) + (f" (and {more} more)" if more else ""))


class Part(BaseModel):
    """A typed part of a format (an object inside the file): the same strictness, no version of its own."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, protected_namespaces=())

    @classmethod
    def from_json(cls: type[P], data: Any, file: str, where: str = "") -> P:
        """Validate one part; the error's key is prefixed with `where` (its dotted place in the file)."""
        try:
            return cls.model_validate_json(json.dumps(data, allow_nan=False))
        except (TypeError, ValueError) as e:
            err = format_error(e, file) if isinstance(e, ValueError) else FormatError(file, None, str(e))
            key = ".".join(k for k in (where, err.key) if k).replace(".[", "[") or None
            raise FormatError(file, key, err.reason) from None

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


P = TypeVar("P", bound=Part)


def require_in_file(data: Any, info: ValidationInfo, keys: Iterable[str], title: str) -> Any:
    """For a model validator (mode="before"): a key with a default for Python callers may still be
    required in the file; each one absent there is a "missing" error at its key."""
    if info.mode == "json" and isinstance(data, Mapping):
        missing = [k for k in keys if k not in data]
        if missing:
            errors: list[InitErrorDetails] = [{"type": "missing", "loc": (k,), "input": data} for k in missing]
            raise ValidationError.from_exception_data(title, errors)
    return data
