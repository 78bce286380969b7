"""Composition: two renders side by side with a soft seam, as one PIL image.

``compose`` is the pixel rule (cover-crop, cross-fade); ``Composer`` reads a pair's two renders
(reduced copies where both fit) and refuses a huge or mislabelled image before decoding it.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from vignette_bench.formats.pair_config import DEFAULT_SEAM, DEFAULT_SIZE
from vignette_bench.loader.errors import CorruptRenderError, VignetteError
from vignette_bench.loader.reader import RenderLocation, RenderReader

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

# ---------------------------------------------------------------------------------- composition


@lru_cache(maxsize=16)
def _seam_mask(overlap: int, height: int):
    """L mask for the left tile's overlap strip: a linear ramp from opaque to transparent."""
    from PIL import Image

    row = np.round(np.linspace(1, 0, overlap + 2, dtype=np.float32)[1:-1] * 255).astype(np.uint8)
    return Image.fromarray(np.broadcast_to(row, (height, overlap)).copy(), mode="L")


def _tile(data: bytes, tile_w: int, height: int) -> PILImage:
    """Decode (at reduced scale where the format allows) and cover-crop to tile_w x height."""
    from PIL import Image

    opened = Image.open(io.BytesIO(data))
    if opened.format == "JPEG":
        opened.draft("RGB", (tile_w, height))  # DCT scaling: decode at 1/2, 1/4 or 1/8 when big enough
    img: PILImage = opened.convert("RGB") if opened.mode != "RGB" else opened
    w, h = img.size
    if (w, h) == (tile_w, height):  # a copy cropped to the tile (`vignette build reduce --crop`): as it is
        img.load()
        return img
    box: tuple[float, float, float, float]
    if w * height > h * tile_w:  # wider than the tile: crop the sides
        cw = h * tile_w / height
        box = ((w - cw) / 2, 0, (w + cw) / 2, h)
    else:
        ch = w * height / tile_w
        box = (0, (h - ch) / 2, w, (h + ch) / 2)
    return img.resize((tile_w, height), Image.Resampling.BILINEAR, box=box)


def compose(
    left: bytes, right: bytes, size: tuple[int, int] = DEFAULT_SIZE, seam: int = DEFAULT_SEAM, image_format: str = "PNG"
):
    """Two encoded renders side by side, cross-faded over ``seam`` pixels, as one PIL image.

    Each render is cover-cropped (centre) to a tile of (width + seam) / 2 x height, so no person is
    distorted; the tiles overlap by ``seam`` pixels in the middle, where the left fades into the
    right. ``.format`` is set to ``image_format`` (outlines requires it).
    """
    from PIL import Image

    width, height = size
    if width < 2 or height < 1 or not 0 <= seam < width:
        raise VignetteError(f"bad output size {size} / seam {seam}: need width >= 2, height >= 1, 0 <= seam < width")
    tile_w = (width + seam + 1) // 2
    overlap = 2 * tile_w - width
    # not initialised (no fill): the right tile covers [width - tile_w, width), the left one the rest
    out = Image.new("RGB", (width, height), None)
    out.paste(_tile(right, tile_w, height), (width - tile_w, 0))
    left_tile = _tile(left, tile_w, height)
    solid = tile_w - overlap  # plain copy up to the seam; only the overlap strip is blended
    out.paste(left_tile.crop((0, 0, solid, height)), (0, 0))
    if overlap:
        out.paste(left_tile.crop((solid, 0, tile_w, height)), (solid, 0), _seam_mask(overlap, height))
    out.format = image_format
    return out


@dataclass
class Composer:
    """Composes pair images from keys; picklable (workers re-open their own connection)."""

    reader: RenderReader
    size: tuple[int, int] = DEFAULT_SIZE
    seam: int = DEFAULT_SEAM
    image_format: str = "PNG"
    use_reduced: bool = True  # compose from the renders' reduced copies where both fit (versioned pixels)

    def render(self, key: str) -> bytes:
        return self.reader.read(key)[0]

    def _fits(self, key: str) -> bool:
        """Whether `key` has a reduced copy that covers a tile without upscaling."""
        copy = self.reader.index.reduced.get(key)
        if copy is None:
            return False
        tile_w = (self.size[0] + self.seam + 1) // 2
        return copy[1] >= tile_w and copy[2] >= self.size[1]

    def pair(self, key_left: str, key_right: str):
        reduced = self.use_reduced and self._fits(key_left) and self._fits(key_right)
        left, loc_l = self.reader.read(key_left, reduced)
        right, loc_r = self.reader.read(key_right, reduced)
        for data, loc in ((left, loc_l), (right, loc_r)):
            _check_header(data, loc, self.reader.index.source.url(loc.shard))
        try:
            return compose(left, right, self.size, self.seam, self.image_format)
        except (OSError, SyntaxError, ValueError) as e:
            if isinstance(e, VignetteError):
                raise
            bad = _first_undecodable(((left, loc_l), (right, loc_r)))
            where = (
                f"{self.reader.index.source.url(bad.shard)} at byte {bad.offset}" if bad else "one of the two renders"
            )
            name = bad.key if bad else f"{key_left} / {key_right}"
            raise CorruptRenderError(
                f"render {name!r} in {where} cannot be decoded ({e}); re-render it and rebuild the shard"
            ) from e


MAX_RENDER_PIXELS = 4096 * 4096  # renders are 1024²; a header claiming more is refused before decoding
_PIL_FORMATS = {"jpeg": "JPEG", "webp": "WEBP"}


def _check_header(data: bytes, loc: RenderLocation, where: str) -> None:
    """Format and size from the header only, so a huge or mislabelled image is never decoded."""
    import warnings

    from PIL import Image

    try:
        with warnings.catch_warnings():  # the size is checked below, against a far smaller limit than PIL's
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as im:
                fmt, (w, h) = im.format, im.size
    except Image.DecompressionBombError:
        raise CorruptRenderError(
            f"render {loc.key!r} in {where} at byte {loc.offset}: the header claims an image far above "
            f"{MAX_RENDER_PIXELS:,} pixels; downscale it and rebuild the shard"
        ) from None
    except Exception as e:  # noqa: BLE001 - any failure to read an untrusted header
        raise CorruptRenderError(
            f"render {loc.key!r} in {where} at byte {loc.offset}: cannot be decoded "
            f"(unreadable image header, {type(e).__name__}); re-render it and rebuild the shard"
        ) from None
    if fmt != _PIL_FORMATS.get(loc.format):
        raise CorruptRenderError(
            f"render {loc.key!r} in {where} at byte {loc.offset}: the image is {fmt}, the index says {loc.format}; re-encode it with `vignette build shard`"
        )
    if w * h > MAX_RENDER_PIXELS:
        raise CorruptRenderError(
            f"render {loc.key!r} in {where} at byte {loc.offset}: {w}x{h} is above {MAX_RENDER_PIXELS:,} pixels; downscale it and rebuild the shard"
        )


def _first_undecodable(items: Iterable[tuple[bytes, RenderLocation]]) -> RenderLocation | None:
    from PIL import Image

    for data, loc in items:
        try:
            Image.open(io.BytesIO(data)).load()
        except Exception:  # noqa: BLE001 - any decoder failure marks this one as the culprit
            return loc
    return None
