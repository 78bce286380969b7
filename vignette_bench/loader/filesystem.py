"""The image column's filesystem: ``vignette://`` paths that compose a pair when opened.

Registered with fsspec on import (and through the ``fsspec.specs`` entry point in pyproject.toml),
so any process with the package installed can open the paths a pair dataset holds.
"""

from __future__ import annotations

import io
import os
from typing import Any

from fsspec import AbstractFileSystem

from vignette_bench.loader.compose import Composer
from vignette_bench.loader.errors import VignetteError
from vignette_bench.loader.reader import RenderIndex, RenderReader
from vignette_bench.loader.sources import Source

# ------------------------------------------------------------------ the image column: vignette://


PAIR_PROTOCOL = "vignette"


def pair_url(root: str, key_left: str, key_right: str, size: tuple[int, int], seam: int, reduced: bool = True) -> str:
    """Where a pair image "lives": ``vignette://<quoted source root>/<W>x<H>/<seam>/<left>/<right>.png``.

    The ``image`` column of every pair dataset holds such a path (no bytes), exactly as a plain image
    dataset holds file paths, so every `datasets` operation treats it as one: formats decode it, column
    operations and metadata reads never touch it, and ``push_to_hub``/``embed_table_storage`` read its
    bytes through fsspec like any remote file. `PairFileSystem` composes the pair when it is opened.
    ``reduced=False`` (composed from the full renders, never their reduced copies) is written as a ``f``
    after the seam, so any process that opens the path composes the same pixels.
    """
    from urllib.parse import quote

    flag = "" if reduced else "f"
    return f"{PAIR_PROTOCOL}://{quote(root, safe='')}/{size[0]}x{size[1]}/{seam}{flag}/{key_left}/{key_right}.png"


def _parse_pair_url(path: str) -> tuple[str, str, str, tuple[int, int], int, bool]:
    """(source root, left key, right key, size, seam, reduced) of a pair image path."""
    from urllib.parse import unquote

    body = path.split("://", 1)[-1]
    parts = body.split("/")
    if len(parts) != 5 or not parts[4].endswith(".png") or "x" not in parts[1]:
        raise VignetteError(f"{path!r} is not a vignette pair image path (vignette://SOURCE/WxH/SEAM/LEFT/RIGHT.png)")
    width, height = (int(v) for v in parts[1].split("x"))
    seam, reduced = (parts[2][:-1], False) if parts[2].endswith("f") else (parts[2], True)
    return unquote(parts[0]), parts[3], parts[4][: -len(".png")], (width, height), int(seam), reduced


class PairFileSystem(AbstractFileSystem):  # type: ignore[misc]
    """Read-only fsspec filesystem whose files are composed pair images (PNG). Registered for the
    ``vignette`` protocol on import and through the ``fsspec.specs`` entry point, so any process that has
    the package installed (DataLoader workers, a ``load_from_disk`` elsewhere) can open the paths."""

    protocol = PAIR_PROTOCOL
    root_marker = ""
    cachable = True

    # One composer per (source, size, seam, reduced, process), shared by every instance: load_dataset puts the
    # index it already read here, so opening the images reads no index twice.
    composers: dict[tuple[str, tuple[int, int], int, bool, int], Composer] = {}

    @classmethod
    def _strip_protocol(cls, path: Any) -> str:
        text = str(path[0] if isinstance(path, list) else path)
        return text.split("://", 1)[-1] if text.startswith(f"{PAIR_PROTOCOL}://") else text

    def _composer(self, root: str, size: tuple[int, int], seam: int, reduced: bool = True) -> Composer:
        key = (root, size, seam, reduced, os.getpid())  # a forked worker opens its own reader
        if key not in PairFileSystem.composers:
            reader = RenderReader(RenderIndex.load(Source(root)))
            PairFileSystem.composers[key] = Composer(reader, size, seam, use_reduced=reduced)
        return PairFileSystem.composers[key]

    composed = 0  # pairs composed in this process (tests check that metadata reads compose none)

    def cat_file(self, path: str, start: int | None = None, end: int | None = None, **kwargs: Any) -> bytes:
        root, left, right, size, seam, reduced = _parse_pair_url(path)
        PairFileSystem.composed += 1
        image = self._composer(root, size, seam, reduced).pair(left, right)
        buf = io.BytesIO()
        image.save(buf, format="PNG", compress_level=1)  # fast; embedded copies (push_to_hub) stay compact
        return buf.getvalue()[start:end]

    def _open(self, path: str, mode: str = "rb", **kwargs: Any):
        if mode != "rb":
            raise VignetteError(f"{path}: pair images are read-only")
        return io.BytesIO(self.cat_file(path))

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        # The exact size needs the pair composed; readers only use it to plan (datasets' save_to_disk
        # estimates shard sizes with it), so give the size of a typical PNG of that area instead.
        _, _, _, (w, h), *_ = _parse_pair_url(path)
        return {"name": path, "size": w * h, "type": "file"}

    def ls(self, path: str, detail: bool = True, **kwargs: Any):
        info = self.info(path)
        return [info] if detail else [info["name"]]


def _register_protocol() -> None:
    import fsspec

    fsspec.register_implementation(PAIR_PROTOCOL, PairFileSystem, clobber=True)


_register_protocol()
