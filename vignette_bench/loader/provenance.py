"""Which source files decide a pair's pixels, and one digest over them (a run records it)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent  # vignette_bench/
# Beside the loader package: the render index schema and the render-picking rule (variant_key), the
# selection and pixel options, and the top-level facade.
FORMATS = ("render_index", "pair_config")  # modules of vignette_bench.formats


def pixel_sources(package: Path = PACKAGE) -> list[Path]:
    """Every source file that decides which pixels a pair has, in a fixed order (`package`: a vignette_bench folder)."""
    files = sorted((package / "loader").glob("*.py"))
    files += [package / "formats" / f"{name}.py" for name in FORMATS]
    facade = package.parent / "vignette.py"
    if facade.exists():  # installed: vignette.py sits beside the package in site-packages too
        files.append(facade)
    return files


def digest(files: Iterable[Path], root: Path) -> str:
    """sha256 over each file's path (relative to `root`) and bytes."""
    h = hashlib.sha256()
    for f in files:
        h.update(f.resolve().relative_to(root).as_posix().encode() + b"\0")
        data = f.read_bytes()
        h.update(len(data).to_bytes(8, "big") + data)
    return h.hexdigest()


def provenance_digest(package: Path = PACKAGE) -> str:
    """sha256 of the loader's pixel-deciding sources (`pixel_sources`): equal digests, equal pixels for a pair."""
    return digest(pixel_sources(package), package.parent)
