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


# What a pair path's suffix serves. BMP (the default since issue 25) is uncompressed: ~0.1 ms to write
# and ~0.2 ms to read a 672x336 pair, where PNG (compress_level=1) took ~20 ms to write and ~6 ms to read,
# two thirds of the time of a row; the pixels, mode and size are the same. ``.png`` paths (every table
# written before, and ``load_dataset(image_format="PNG")``) keep serving PNG.
PAIR_ENCODINGS = {"bmp": "BMP", "png": "PNG"}
DEFAULT_ENCODING = "BMP"


def pair_url(
    root: str,
    key_left: str,
    key_right: str,
    size: tuple[int, int],
    seam: int,
    reduced: bool = True,
    image_format: str = DEFAULT_ENCODING,
) -> str:
    """Where a pair image "lives": ``vignette://<quoted source root>/<W>x<H>/<seam>/<left>/<right>.bmp``.

    The ``image`` column of every pair dataset holds such a path (no bytes), exactly as a plain image
    dataset holds file paths, so every `datasets` operation treats it as one: formats decode it, column
    operations and metadata reads never touch it, and ``push_to_hub``/``embed_table_storage`` read its
    bytes through fsspec like any remote file. `PairFileSystem` composes the pair when it is opened.
    ``reduced=False`` (composed from the full renders, never their reduced copies) is written as a ``f``
    after the seam, so any process that opens the path composes the same pixels. The suffix says how the
    pair is encoded (`PAIR_ENCODINGS`): ``.bmp`` (default, uncompressed, fast) or ``.png`` (compact).
    """
    from urllib.parse import quote

    suffix = _suffix(image_format)
    flag = "" if reduced else "f"
    return f"{PAIR_PROTOCOL}://{quote(root, safe='')}/{size[0]}x{size[1]}/{seam}{flag}/{key_left}/{key_right}.{suffix}"


def _suffix(image_format: str) -> str:
    for suffix, name in PAIR_ENCODINGS.items():
        if name == str(image_format).upper():
            return suffix
    raise VignetteError(
        f"image_format {image_format!r}: pair images are served as {' or '.join(PAIR_ENCODINGS.values())} "
        "(vignette:// paths; docs/vignette.md)"
    )


def _split_suffix(name: str) -> tuple[str, str] | None:
    """(right key, encoding) of a path's last part, or None if its suffix is no pair encoding."""
    stem, dot, suffix = name.rpartition(".")
    return (stem, PAIR_ENCODINGS[suffix]) if dot and suffix in PAIR_ENCODINGS else None


def _parse_pair_url(path: str) -> tuple[str, str, str, tuple[int, int], int, bool]:
    """(source root, left key, right key, size, seam, reduced) of a pair image path."""
    root, left, right, size, seam, reduced, _ = _parse_pair_path(path)
    return root, left, right, size, seam, reduced


def _parse_pair_path(path: str) -> tuple[str, str, str, tuple[int, int], int, bool, str]:
    """(source root, left key, right key, size, seam, reduced, encoding) of a pair image path."""
    from urllib.parse import unquote

    body = path.split("://", 1)[-1]
    parts = body.split("/")
    last = _split_suffix(parts[4]) if len(parts) == 5 else None
    if last is None or "x" not in parts[1]:
        raise VignetteError(
            f"{path!r} is not a vignette pair image path (vignette://SOURCE/WxH/SEAM/LEFT/RIGHT.bmp or .png)"
        )
    width, height = (int(v) for v in parts[1].split("x"))
    seam, reduced = (parts[2][:-1], False) if parts[2].endswith("f") else (parts[2], True)
    return unquote(parts[0]), parts[3], last[0], (width, height), int(seam), reduced, last[1]


class PairFileSystem(AbstractFileSystem):  # type: ignore[misc]
    """Read-only fsspec filesystem whose files are composed pair images (BMP or PNG, by suffix). Registered for the
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
            # A forked worker (a DataLoader's) inherits its parent's composer: it reuses the index and the
            # renders already read (a reader's copy has its own lock; its source reconnects per process)
            # instead of reading the index again.
            parent = next((c for k, c in PairFileSystem.composers.items() if k[:4] == key[:4]), None)
            if parent is not None:
                reader = parent.reader.fork()
            else:
                reader = RenderReader(RenderIndex.load(Source(root)))
            PairFileSystem.composers[key] = Composer(reader, size, seam, use_reduced=reduced)
        return PairFileSystem.composers[key]

    composed = 0  # pairs composed in this process (tests check that metadata reads compose none)

    def cat_file(self, path: str, start: int | None = None, end: int | None = None, **kwargs: Any) -> bytes:
        root, left, right, size, seam, reduced, encoding = _parse_pair_path(path)
        PairFileSystem.composed += 1
        image = self._composer(root, size, seam, reduced).pair(left, right)
        buf = io.BytesIO()
        if encoding == "PNG":
            image.save(buf, format="PNG", compress_level=1)  # what .png paths always served
        else:
            image.save(buf, format="BMP")
        data = buf.getvalue()
        return data if start is None and end is None else data[start:end]

    def _open(self, path: str, mode: str = "rb", **kwargs: Any):
        if mode != "rb":
            raise VignetteError(f"{path}: pair images are read-only")
        return io.BytesIO(self.cat_file(path))

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        # Readers only use the size to plan (datasets' save_to_disk estimates shard sizes with it). A BMP's
        # is exact (54-byte header, rows padded to 4 bytes); a PNG's would need the pair composed, so
        # give that of a typical PNG of that area instead.
        _, _, _, (w, h), _, _, encoding = _parse_pair_path(path)
        size = 54 + (3 * w + 3) // 4 * 4 * h if encoding == "BMP" else w * h
        return {"name": path, "size": size, "type": "file"}

    def ls(self, path: str, detail: bool = True, **kwargs: Any):
        info = self.info(path)
        return [info] if detail else [info["name"]]


def _register_protocol() -> None:
    import fsspec

    fsspec.register_implementation(PAIR_PROTOCOL, PairFileSystem, clobber=True)


_register_protocol()
