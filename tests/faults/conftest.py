"""Shared fixtures of the fault-injection suite: one small source built once, copied per case, and a
snapshot of every file so a case can assert that nothing already written was lost or changed."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from vignette_bench.dataset_builder.sample import build_sample


@pytest.fixture(scope="session")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sample(
        tmp_path_factory.mktemp("faults") / "src",
        size=48,
        identities=("muslim", "hindu", "christian"),
        activities=("cooking",),
    )


@pytest.fixture()
def source(pristine: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "src"
    shutil.copytree(pristine, dst)
    return dst


def snapshot(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }
