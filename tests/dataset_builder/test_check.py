"""check: each failure kind is caught with its reason; the face step finds drawn faces and not noise."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from vignette_bench.dataset_builder.check import (
    CheckSettings,
    check_renders,
    count_faces,
    near_duplicates,
    rerender_failures,
)
from vignette_bench.dataset_builder.sample import write_placeholder_renders
from vignette_bench.formats.render_record import RecordError


@pytest.fixture()
def renders(tmp_path: Path) -> Path:
    d = tmp_path / "r"
    write_placeholder_renders(d, size=256, identities=("old", "young"), activities=("cooking", "driving"))
    return d


def _by_key(results):  # type: ignore[no-untyped-def]
    return {r.key: r for r in results}


def test_placeholders_pass_and_report_as_placeholders(renders: Path) -> None:
    results = check_renders(renders, progress=False)
    assert len(results) == 12
    assert all(r.ok and r.placeholder and r.faces >= 1 and r.reasons == "" for r in results), [
        r.reasons for r in results if not r.ok
    ]


def test_face_step_finds_a_drawn_face_but_not_noise_or_a_blank() -> None:
    from vignette_bench.dataset_builder.placeholder import draw_placeholder
    from vignette_bench.dataset_builder.records import plan_renders
    from vignette_bench.taxonomy import load_taxonomy

    spec = plan_renders(load_taxonomy(), identities=["old"], activities=["cooking"], genders=["female"])[0]
    assert count_faces(draw_placeholder(spec, 256, 256)) >= 1
    noise = Image.fromarray(np.random.default_rng(0).integers(0, 256, (256, 256, 3), dtype=np.uint8))
    assert count_faces(noise) == 0
    assert count_faces(Image.new("RGB", (256, 256), (128, 128, 128))) == 0


def test_each_failure_kind_has_its_reason(renders: Path) -> None:
    Image.new("RGB", (256, 256), (120, 120, 120)).save(renders / "male-age-old-cooking.png")  # blank
    (renders / "male-age-old-driving.png").write_bytes(b"\x89PNG broken")  # corrupt
    Image.open(renders / "male-age-young-cooking.png").resize((200, 200)).save(
        renders / "male-age-young-cooking.png"
    )  # wrong size
    shutil.copyfile(renders / "female-age-old-cooking.png", renders / "female-age-young-cooking.png")  # duplicate
    (renders / "female-age-old-driving.json").unlink()  # no record
    r = _by_key(check_renders(renders, progress=False))
    assert (
        "blank or near-uniform" in r["male-age-old-cooking"].reasons
        and "no face found" in r["male-age-old-cooking"].reasons
    )
    assert not r["male-age-old-driving"].decodable and "cannot decode" in r["male-age-old-driving"].reasons
    assert "size 200x200, expected 256x256" in r["male-age-young-cooking"].reasons
    dup = r["female-age-young-cooking"]
    assert dup.near_duplicate_of == "female-age-old-cooking" and dup.hash_distance == 0 and not dup.ok
    assert "record unusable" in r["female-age-old-driving"].reasons
    assert sum(not x.ok for x in r.values()) == 5
    assert r["female-age-old-cooking"].ok  # the first of a duplicate pair stays


def test_near_duplicates_uses_hamming_distance() -> None:
    assert near_duplicates([0b0, 0b111, 0b1, 2**63 + 2**62], 1) == [(-1, -1), (-1, -1), (0, 1), (-1, -1)]


def test_cli_writes_table_and_lists_failures(renders: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vignette_bench.cli import main

    Image.new("RGB", (256, 256)).save(renders / "male-age-old-cooking.png")
    assert main(["build", "check", str(renders), "--out", str(tmp_path / "t.csv")]) == 1
    out = capsys.readouterr().out
    assert "FAIL male-age-old-cooking: blank or near-uniform" in out and "11/12 renders passed" in out
    table = pd.read_csv(tmp_path / "t.csv")
    assert len(table) == 12 and table.ok.sum() == 11
    assert (
        main(["build", "check", str(renders), "--no-face", "--min-std", "0", "--workers", "2"]) == 0
    )  # thresholds are options
    assert pd.read_parquet(renders / "check.parquet").ok.all()


def test_placeholders_are_not_rerendered(renders: Path) -> None:
    Image.new("RGB", (256, 256)).save(renders / "male-age-old-cooking.png")
    results = check_renders(renders, CheckSettings(face=False), progress=False)
    with pytest.raises(RecordError, match="male-age-old-cooking.*drawn placeholder"):
        rerender_failures(renders, results)


def test_workers_give_the_same_results(renders: Path) -> None:
    Image.new("RGB", (256, 256), (120, 120, 120)).save(renders / "male-age-old-cooking.png")
    assert check_renders(renders, progress=False, workers=2) == check_renders(renders, progress=False)
