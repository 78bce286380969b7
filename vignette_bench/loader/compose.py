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


def _tile(opened: PILImage, tile_w: int, height: int) -> PILImage:
    """Decode an opened image (at reduced scale where the format allows) and cover-crop to tile_w x height."""
    from PIL import Image

    if opened.format == "JPEG":
        opened.draft("RGB", (tile_w, height))  # DCT scaling: decode at 1/2, 1/4 or 1/8 when big enough
    img: PILImage = opened.convert("RGB") if opened.mode != "RGB" else opened
    w, h = img.size
    box: tuple[float, float, float, float]
    if w * height > h * tile_w:  # wider than the tile: crop the sides
        cw = h * tile_w / height
        box = ((w - cw) / 2, 0, (w + cw) / 2, h)
    else:
        ch = w * height / tile_w
        box = (0, (h - ch) / 2, w, (h + ch) / 2)
    # a box of whole pixels the tile's size (the default tile of a square render's 352-px copy) resizes at
    # scale 1: exactly a crop's pixels, ~0.015 ms (a 384-px copy's resize ~0.9 ms); tests pin the equality
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

    _tile_width(size, seam)  # a bad size is named before any image is opened
    return _compose(Image.open(io.BytesIO(left)), Image.open(io.BytesIO(right)), size, seam, image_format)


def _tile_width(size: tuple[int, int], seam: int) -> int:
    width, height = size
    if width < 2 or height < 1 or not 0 <= seam < width:
        raise VignetteError(f"bad output size {size} / seam {seam}: need width >= 2, height >= 1, 0 <= seam < width")
    return (width + seam + 1) // 2


def _compose(left: PILImage, right: PILImage, size: tuple[int, int], seam: int, image_format: str):
    """`compose` of two opened (not yet decoded) images: `Composer.pair` opens each once, for its header check too."""
    from PIL import Image

    width, height = size
    tile_w = _tile_width(size, seam)
    overlap = 2 * tile_w - width
    # not initialised (no fill): the left tile covers [0, tile_w), the right one [width - tile_w, width)
    out = Image.new("RGB", (width, height), None)
    left_tile = _tile(left, tile_w, height)
    out.paste(left_tile, (0, 0))
    out.paste(_tile(right, tile_w, height), (width - tile_w, 0))  # over the left tile's overlap strip
    if overlap:  # which the left tile's strip then fades into (only the strip is cropped: ~0.1 ms less)
        solid = tile_w - overlap
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
        opened = [
            _check_header(data, loc, self.reader.index.source.url(loc.shard))
            for data, loc in ((left, loc_l), (right, loc_r))
        ]
        try:
            return _compose(opened[0], opened[1], self.size, self.seam, self.image_format)
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


def _check_header(data: bytes, loc: RenderLocation, where: str) -> PILImage:
    """The image opened, its format and size checked from the header only, so a huge or mislabelled
    image is never decoded; the caller decodes it (one open per render: ~0.1 ms each)."""
    import warnings

    from PIL import Image

    try:
        with warnings.catch_warnings():  # the size is checked below, against a far smaller limit than PIL's
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            im = Image.open(io.BytesIO(data))
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
    return im


def _first_undecodable(items: Iterable[tuple[bytes, RenderLocation]]) -> RenderLocation | None:
    from PIL import Image

    for data, loc in items:
        try:
            Image.open(io.BytesIO(data)).load()
        except Exception:  # noqa: BLE001 - any decoder failure marks this one as the culprit
            return loc
    return None
