"""``vignette build check``: find renders that should not go into the benchmark.

Checks per render: it decodes; it has the recorded (or requested) size; it is not blank or
near-uniform (grey-level standard deviation); it is not a near-duplicate of another render
(64-bit perceptual hash, Hamming distance); a face is visible.

Face detector: OpenCV's Haar cascades (frontal, plus profile in both directions), which ship
inside the opencv-python-headless 4.x wheel (``cv2.data.haarcascades``), so the check needs no
download, runs on CPU in milliseconds and gives the same answer everywhere. Haar cascades miss
some real faces (strong turns, small faces, occlusion) and can fire on face-like patterns, so a
failure is a flag for a re-render or a look, not a verdict; see docs/builder.md.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from PIL import Image, UnidentifiedImageError
from tqdm.auto import tqdm

from vignette_bench.dataset_builder.arguments import CheckSettings
from vignette_bench.dataset_builder.arguments import check_add_arguments as add_arguments  # noqa: F401 (the parser lives in a light module)
from vignette_bench.dataset_builder.records import stable_seed
from vignette_bench.dataset_builder.shard import INPUT_IMAGE_SUFFIXES
from vignette_bench.formats.render_record import RecordError, RenderRecord, read_render_record

DETECT_SIDE = 512


@dataclass(frozen=True)
class CheckResult:
    key: str
    image: str
    placeholder: bool
    seed: int
    decodable: bool
    width: int
    height: int
    size_ok: bool
    grey_std: float
    not_blank: bool
    phash: str
    near_duplicate_of: str
    hash_distance: int
    faces: int
    face_ok: bool
    ok: bool
    reasons: str


@lru_cache(maxsize=1)
def _cascades() -> tuple[Any, Any]:
    import cv2

    base = Path(cv2.data.haarcascades)  # type: ignore[attr-defined]  # cv2's stubs omit the data module
    frontal = cv2.CascadeClassifier(str(base / "haarcascade_frontalface_default.xml"))
    profile = cv2.CascadeClassifier(str(base / "haarcascade_profileface.xml"))
    if frontal.empty() or profile.empty():
        raise RuntimeError(
            f"OpenCV Haar cascades missing under {base}; install opencv-python-headless 4.x (5.x dropped them)"
        )
    return frontal, profile


def count_faces(image: Image.Image, min_face_fraction: float = 0.06) -> int:
    """Faces found by the frontal cascade, or else by the profile cascade facing either way."""
    import cv2

    scale = min(
        1.0, DETECT_SIDE / max(image.size)
    )  # faces are >= 6% of the side: 512 px suffices, and is ~4x faster than 1024
    if scale < 1.0:
        image = image.resize((round(image.width * scale), round(image.height * scale)), Image.Resampling.BILINEAR)
    grey = cv2.equalizeHist(np.asarray(image.convert("L")))
    side = max(24, int(min(grey.shape) * min_face_fraction))
    frontal, profile = _cascades()
    kw = dict(scaleFactor=1.1, minNeighbors=5, minSize=(side, side))
    n = len(frontal.detectMultiScale(grey, **kw))  # type: ignore[attr-defined]
    if n == 0:
        n = len(profile.detectMultiScale(grey, **kw)) + len(
            profile.detectMultiScale(np.ascontiguousarray(grey[:, ::-1]), **kw)
        )  # type: ignore[attr-defined]
    return n


def _phash(image: Image.Image) -> int:
    import imagehash

    return int(str(imagehash.phash(image)), 16)


def near_duplicates(hashes: Sequence[int], max_distance: int) -> list[tuple[int, int]]:
    """For each image, the earlier image nearest to it if within ``max_distance`` bits: (index, distance) or (-1, -1)."""
    h = np.array(hashes, dtype=np.uint64)
    out = [(-1, -1)] * len(h)
    for i in range(1, len(h)):
        d = np.bitwise_count(h[:i] ^ h[i])
        j = int(np.argmin(d))
        if d[j] <= max_distance:
            out[i] = (j, int(d[j]))
    return out


def _image_paths(render_dir: Path) -> dict[str, Path]:
    return {
        p.name[: -len(p.suffix)]: p
        for p in sorted(Path(render_dir).iterdir())
        if not p.name.startswith(".") and p.suffix.lower() in INPUT_IMAGE_SUFFIXES
    }


MAX_CHECK_PIXELS = 8192 * 8192


def _inspect(item: tuple[str, Path, CheckSettings]) -> tuple[dict, int]:
    """All per-image checks of one render: (row with its reasons, perceptual hash or -1)."""
    key, path, settings = item
    reasons: list[str] = []
    record: RenderRecord | None = None
    try:
        record = read_render_record(path.parent / f"{key}.json")
    except (OSError, RecordError) as e:
        reasons.append(f"record unusable ({str(e).splitlines()[0][:120]})")
    row: dict[str, Any] = dict(
        key=key,
        image=str(path),
        placeholder=bool(record and record.placeholder),
        seed=record.seed if record else -1,
        decodable=False,
        width=0,
        height=0,
        size_ok=False,
        grey_std=0.0,
        not_blank=False,
        phash="",
        near_duplicate_of="",
        hash_distance=-1,
        faces=0,
        face_ok=False,
        reasons=reasons,
    )
    try:
        with warnings.catch_warnings():  # the size is checked just below, against a smaller limit
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            im = Image.open(path)
        with im:
            # the header's size first: a 30000x30000 file fails this render, not the whole check
            if im.width * im.height > MAX_CHECK_PIXELS:
                reasons.append(f"{im.width}x{im.height} is above {MAX_CHECK_PIXELS:,} pixels; not decoded")
                row.update(width=im.width, height=im.height)
                return row, -1
            im.load()
            image = im.convert("RGB")
    except (UnidentifiedImageError, OSError, SyntaxError, Image.DecompressionBombError, ValueError) as e:
        reasons.append(f"cannot decode ({e})")
        return row, -1
    row.update(decodable=True, width=image.width, height=image.height)
    want = settings.expected_size or ((record.width, record.height) if record else None)
    row["size_ok"] = want is not None and image.size == tuple(want)
    if not row["size_ok"]:
        reasons.append(
            f"size {image.width}x{image.height}, expected {want[0]}x{want[1]}" if want else "size unknown (no record)"
        )
    row["grey_std"] = float(np.asarray(image.convert("L").resize((64, 64)), dtype=np.float32).std())
    row["not_blank"] = row["grey_std"] >= settings.min_std
    if not row["not_blank"]:
        reasons.append(f"blank or near-uniform (grey std {row['grey_std']:.1f} < {settings.min_std})")
    h = _phash(image)
    row["phash"] = f"{h:016x}"
    if settings.face:
        row["faces"] = count_faces(image, settings.min_face_fraction)
        row["face_ok"] = row["faces"] > 0
        if not row["face_ok"]:
            reasons.append("no face found (Haar cascade)")
    return row, h


def check_renders(
    render_dir: Path,
    settings: CheckSettings = CheckSettings(),  # noqa: B008 - a frozen dataclass
    progress: bool = True,
    workers: int = 1,
) -> list[CheckResult]:
    """Check every render in a folder; one result per image, in key order.

    Per-image checks run in ``workers`` processes; the near-duplicate pass needs all hashes and runs after.
    """
    items = [(key, path, settings) for key, path in _image_paths(render_dir).items()]
    partial: list[dict] = []
    hashes: list[int] = []
    with ProcessPoolExecutor(workers) if workers > 1 else nullcontext() as pool:
        mapped = pool.map(_inspect, items, chunksize=8) if pool is not None else map(_inspect, items)
        for row, h in tqdm(mapped, total=len(items), desc="check", unit="img", disable=not progress):
            partial.append(row)
            hashes.append(h)
    decoded = [i for i, h in enumerate(hashes) if h >= 0]
    for i, (j, dist) in zip(decoded, near_duplicates([hashes[i] for i in decoded], settings.max_hash_distance)):
        if j >= 0:
            other = partial[decoded[j]]["key"]
            partial[i].update(near_duplicate_of=other, hash_distance=dist)
            partial[i]["reasons"].append(f"near-duplicate of {other} (phash distance {dist})")
    results = []
    for row in partial:
        if not settings.face:
            row["face_ok"] = True
        reasons = row.pop("reasons")
        results.append(CheckResult(**row, ok=not reasons, reasons="; ".join(reasons)))
    return results


def write_table(results: Sequence[CheckResult], path: Path) -> Path:
    df = pd.DataFrame([asdict(r) for r in results], columns=list(CheckResult.__dataclass_fields__))
    if path.suffix == ".csv":
        df.to_csv(path, index=False)
    else:
        df.to_parquet(path, index=False)
    return path


def rerender_failures(
    render_dir: Path, results: Sequence[CheckResult], device: str = "auto", batch_size: int = 1
) -> int:
    """Re-render failed renders with a new seed chained from the old one (recorded in the new record).

    Each failure is re-made with the settings in its own record (model, steps, guidance, size,
    dtype), so only the seed changes.
    """
    from vignette_bench.dataset_builder.records import RenderSpec
    from vignette_bench.dataset_builder.render import RenderSettings, rerender

    groups: dict[RenderSettings, list[tuple[RenderSpec, int]]] = defaultdict(list)
    for r in results:
        if r.ok:
            continue
        path = Path(render_dir) / f"{r.key}.json"
        try:
            rec = read_render_record(path)
        except (OSError, RecordError) as e:
            raise RecordError(
                f"{path}: key {r.key!r} failed the check and its record is unusable, so its settings are unknown; "
                f"re-run `render` for it instead ({e})"
            ) from e
        if rec.placeholder:
            raise RecordError(
                f"{path}: key {r.key!r} is a drawn placeholder; it cannot be re-rendered by a model (rebuild the sample instead)"
            )
        revision = (
            None if rec.model_revision.startswith("local-sha256:") or not rec.model_revision else rec.model_revision
        )
        settings = RenderSettings(
            model=rec.model_id,
            revision=revision,
            steps=rec.steps,
            guidance=rec.guidance,
            width=rec.width,
            height=rec.height,
            dtype=rec.dtype or "auto",
            device=device,
            batch_size=batch_size,
            max_sequence_length=rec.max_sequence_length or None,
        )
        spec = RenderSpec(
            rec.key, rec.gender, rec.dimension, rec.identity, rec.surface_form, rec.activity, rec.prompt, rec.seed
        )
        groups[settings].append((spec, stable_seed(rec.key, rec.seed)))
    return sum(rerender(items, Path(render_dir), settings) for settings, items in groups.items())


def main(args: argparse.Namespace) -> int:
    settings = CheckSettings(
        min_std=args.min_std, max_hash_distance=args.max_hash_distance, face=not args.no_face, expected_size=args.size
    )
    results = check_renders(args.renders, settings, workers=args.workers)
    if args.retry_invalid and any(not r.ok for r in results):
        n = rerender_failures(args.renders, results, device=args.device)
        print(f"re-rendered {n} failure(s) with new seeds; checking again", file=sys.stderr)
        results = check_renders(args.renders, settings, workers=args.workers)
    table = write_table(results, args.out or Path(args.renders) / "check.parquet")
    failed = [r for r in results if not r.ok]
    for r in failed:
        print(f"FAIL {r.key}: {r.reasons}")
    placeholders = sum(r.placeholder for r in results)
    note = f" ({placeholders} are drawn placeholders: their 'faces' are drawings)" if placeholders else ""
    print(f"{len(results) - len(failed)}/{len(results)} renders passed{note}; table: {table}")
    return 1 if failed else 0
