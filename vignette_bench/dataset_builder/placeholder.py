"""Drawn placeholder renders, for the sample source and the tests (no text-to-image model here).

Each image is a stylised person — a shaded face with eyes, brows, nose and mouth on a body —
coloured by identity, with the activity shown as a coloured band and a prop whose place depends
on the activity, and the words PLACEHOLDER, the surface form and the activity written on it.
Everything is a function of the key, so the sample is byte-for-byte reproducible.
"""

from __future__ import annotations

import colorsys
import hashlib

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from vignette_bench.dataset_builder.records import RenderSpec


def _hue(text: str) -> float:
    return hashlib.sha256(text.encode()).digest()[0] / 255.0


def _rgb(h: float, s: float, v: float) -> tuple[int, int, int]:
    r, g, b = colorsys.hsv_to_rgb(h % 1.0, s, v)
    return int(r * 255), int(g * 255), int(b * 255)


def _font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    return ImageFont.load_default(size=max(8, size))


def draw_placeholder(spec: RenderSpec, width: int = 256, height: int = 256) -> Image.Image:
    """A labelled placeholder for ``spec``; same spec and size → same pixels."""
    w, h = width, height
    u = min(w, h) / 256  # drawing unit
    digest = hashlib.sha256(spec.identity.encode()).digest()
    ident = _rgb(digest[0] / 255, 0.55, 0.45 + 0.5 * digest[1] / 255)
    act = hashlib.sha256((spec.activity or "portrait").encode()).digest()
    act_h = act[0] / 255
    img = Image.new("RGB", (w, h))
    d = ImageDraw.Draw(img)
    # Background: a 4x4 grid of tiles whose brightness spells the render's key, so no two renders
    # share their layout (a perceptual hash sees brightness layout, not hue); the hue is the activity's.
    tiles = hashlib.sha256(spec.key.encode()).digest()
    for i in range(16):
        x0, y0 = (i % 4) * w // 4, (i // 4) * h // 4
        d.rectangle([x0, y0, x0 + w // 4, y0 + h // 4], fill=_rgb(act_h, 0.35, 0.3 + 0.7 * tiles[i] / 255))
    # Body, coloured by identity; men and women differ in shoulders and hair.
    # The figure's place and stripes depend on the identity, so two identities differ in structure too.
    cx, cy, r = int(w * (0.32 + 0.36 * _hue(spec.identity + "x"))), int(h * 0.36), int(46 * u)
    shoulders = int((70 if spec.gender == "male" else 54) * u)
    d.rounded_rectangle([cx - shoulders, cy + r, cx + shoulders, h + 10], radius=int(24 * u), fill=ident)
    stripes = 1 + int(_hue(spec.identity + "s") * 4)
    for i in range(stripes):
        y0 = cy + r + int((14 + 22 * i) * u)
        d.rectangle(
            [cx - shoulders, y0, cx + shoulders, y0 + int(8 * u)], fill=_rgb(_hue(spec.identity) + 0.5, 0.6, 0.35)
        )
    if spec.gender == "female":
        d.ellipse([cx - r - 10 * u, cy - r - 12 * u, cx + r + 10 * u, cy + r + 30 * u], fill=(70, 45, 30))
    else:
        d.chord([cx - r, cy - r - 8 * u, cx + r, cy + r * 0.3], 180, 360, fill=(60, 40, 25))
    # Face: skin oval with shading (a Haar cascade looks for dark eye bands over lighter cheeks).
    face = Image.new("L", (w, h), 0)
    ImageDraw.Draw(face).ellipse([cx - r * 0.8, cy - r, cx + r * 0.8, cy + r * 1.05], fill=255)
    img.paste(Image.new("RGB", (w, h), (224, 186, 150)), mask=face)
    ex, ey, er = r * 0.33, cy - r * 0.12, max(2, r * 0.12)
    for sx in (-1, 1):
        x = cx + sx * ex
        d.line([x - er * 1.8, ey - er * 2.2, x + er * 1.8, ey - er * 2.0], fill=(50, 35, 25), width=max(2, int(4 * u)))
        d.ellipse([x - er * 1.5, ey - er, x + er * 1.5, ey + er], fill=(250, 250, 250))
        d.ellipse([x - er, ey - er, x + er, ey + er], fill=(40, 30, 25))
    d.line(
        [cx, ey + er, cx - er, cy + r * 0.35, cx + er * 0.3, cy + r * 0.4],
        fill=(170, 120, 95),
        width=max(1, int(2 * u)),
    )
    d.arc(
        [cx - r * 0.35, cy + r * 0.35, cx + r * 0.35, cy + r * 0.75],
        20,
        160,
        fill=(140, 50, 50),
        width=max(2, int(4 * u)),
    )
    # A prop whose position encodes the activity.
    if spec.activity:
        px = int(w * (0.12 + 0.76 * _hue(spec.activity + "x")))
        py = int(h * (0.55 + 0.3 * _hue(spec.activity + "y")))
        d.regular_polygon(
            (px, py, int(18 * u)), n_sides=3 + int(_hue(spec.activity + "n") * 4), fill=_rgb(act_h + 0.25, 0.8, 0.9)
        )
    img = img.filter(ImageFilter.GaussianBlur(radius=0.6 * u))
    # Labels last, so they stay sharp.
    d = ImageDraw.Draw(img)
    d.rectangle([0, 0, w, int(22 * u)], fill=(0, 0, 0))
    d.text((w // 2, int(11 * u)), "PLACEHOLDER", fill=(255, 230, 0), anchor="mm", font=_font(int(16 * u)))
    label = [spec.surface_form, spec.activity or "portrait"]
    y = h - int(34 * u)
    d.rectangle([0, y - int(4 * u), w, h], fill=(0, 0, 0))
    for line in label:
        d.text((w // 2, y + int(7 * u)), line, fill=(255, 255, 255), anchor="mm", font=_font(int(13 * u)))
        y += int(15 * u)
    return img


def photo_like(seed: int, width: int = 1024, height: int = 1024) -> Image.Image:
    """A synthetic image with natural-image statistics (1/f amplitude spectrum, colour), for benchmarks.

    Flat drawings compress far better than photos and would make byte counts meaningless.
    """
    rng = np.random.default_rng(seed)
    fy = np.fft.fftfreq(height)[:, None]
    fx = np.fft.rfftfreq(width)[None, :]
    f = np.sqrt(fx**2 + fy**2)
    f[0, 0] = 1.0
    channels = []
    base = rng.normal(size=(height, width // 2 + 1)) + 1j * rng.normal(size=(height, width // 2 + 1))
    for _ in range(3):
        noise = 0.7 * base + 0.3 * (rng.normal(size=base.shape) + 1j * rng.normal(size=base.shape))
        x = np.fft.irfft2(noise / f**1.0, s=(height, width))
        x = (x - x.mean()) / (x.std() + 1e-9)
        channels.append(x)
    arr = np.stack(channels, -1) * 45 + rng.uniform(80, 170, size=3)
    return Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8), "RGB")
