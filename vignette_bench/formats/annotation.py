"""The human-validation files: the items of an export (`items.json`, beside the annotation page) and one
annotator's answers (`annotations-<annotator>-<export_id>.json`, saved by the page).

Both carry their own version in `format` ("vignette-annotations/1", which the page writes too) and have
never carried `schema_version`. A file whose `format` is not that one is refused before anything else
(it is some other JSON); the answers' values are checked against the export's criteria by
vignette_bench/annotate/score.py, which knows them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from vignette_bench.errors import VignetteError
from vignette_bench.formats.base import Format, FormatError, Part

ANNOTATIONS_FORMAT = "vignette-annotations/1"


class AnnotationError(VignetteError):
    """An answers file or the items list is unusable; the message names the file and the fix."""


class AnnotationItem(Part):
    """One item shown on the page."""

    id: str = Field(description="the item's id (answers are keyed by it)")
    dimension: str = Field(description="the identity's dimension")
    identity: str = Field(description="renders: the identity; pairs: the left one")
    activity: str = Field(description='the activity; "" for portraits')
    keys: tuple[str, ...] = Field(description="render keys shown (one, or left and right)")
    label: str = Field(description="surface form shown in the questions (renders) / left form (pairs)")
    label_right: str = Field(default="", description="pairs: right form")
    identity_right: str = Field(default="", description="pairs: the right identity")


class AnnotationItems(Format):
    """The items of one export: what `vignette annotate score` scores the answers against."""

    SCHEMA_VERSION: ClassVar[int] = 1
    WRITES_VERSION: ClassVar[bool] = False
    FILE: ClassVar[str] = "OUT/items.json (beside annotate.html)"
    WRITER: ClassVar[str] = "`vignette annotate export` (vignette_bench/annotate/export.py)"
    READER: ClassVar[str] = "vignette_bench/formats/annotation.py read_annotation_items (`vignette annotate score`)"

    schema_version: int = Field(default=1, exclude=True, description="not written: `format` versions the file")
    format: str = Field(description=f'"{ANNOTATIONS_FORMAT}"')
    export_id: str = Field(description="the export's id (hash of its kind and items): answers name it")
    kind: str = Field(description="renders | pairs")
    source: str = Field(description="the source sampled")
    seed: int = Field(description="the sampling seed")
    n: int = Field(description="items")
    items: tuple[AnnotationItem, ...] = Field(description="the items, in page order")


class AnnotationAnswers(Format):
    """One annotator's answers to one export, as the page saves them."""

    SCHEMA_VERSION: ClassVar[int] = 1
    WRITES_VERSION: ClassVar[bool] = False
    FILE: ClassVar[str] = "annotations-<annotator>-<export_id>.json"
    WRITER: ClassVar[str] = "the annotation page's Save answers (vignette_bench/annotate/export.py SCRIPT)"
    READER: ClassVar[str] = "vignette_bench/formats/annotation.py read_annotation_answers (`vignette annotate score`)"

    schema_version: int = Field(default=1, exclude=True, description="not written: `format` versions the file")
    format: str = Field(description=f'"{ANNOTATIONS_FORMAT}"')
    export_id: str = Field(description="the export answered")
    kind: str | None = Field(default=None, description="renders | pairs (the export's)")
    annotator: str = Field(default="", description="the annotator's id (compared stripped and casefolded)")
    saved_at: str | None = Field(default=None, description="when the page saved the file (ISO 8601)")
    answers: dict[str, Any] = Field(
        description="item id -> criterion -> answer (an option, or a list of visual cues); checked against "
        "the export's criteria by `vignette annotate score`"
    )


def _read(path: Path, cls: type[Format]) -> Any:
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise AnnotationError(f"{path}: not found") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise AnnotationError(f"{path}: not JSON ({e}); was it saved by the annotation page?") from e
    if not isinstance(data, dict) or data.get("format") != ANNOTATIONS_FORMAT:
        raise AnnotationError(
            f"{path}: not a {ANNOTATIONS_FORMAT} file "
            f"(format {data.get('format') if isinstance(data, dict) else None!r})"
        )
    try:
        return cls.from_json(data, str(path))
    except FormatError as e:
        raise AnnotationError(str(e)) from None


def read_annotation_items(path: Path) -> AnnotationItems:
    """An export's items.json; AnnotationError names the file and what is wrong."""
    items: AnnotationItems = _read(path, AnnotationItems)
    return items


def write_annotation_items(path: Path, items: AnnotationItems) -> Path:
    path.write_text(json.dumps(items.to_json(), indent=1))
    return path


def read_annotation_answers(path: Path) -> AnnotationAnswers:
    """One annotator's answers file; AnnotationError names the file and what is wrong."""
    answers: AnnotationAnswers = _read(path, AnnotationAnswers)
    return answers
