"""Your own photos as a source: real photographs shipped with scikit-image (an astronaut, a cameraman)
and drawn placeholders go through labels -> validation -> shards + index -> pairs -> runner, exactly as
renders do. These few photos only show that the path works; they measure nothing about any model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

import vignette
from vignette_bench.cli import main as cli
from vignette_bench.dataset_builder.photos import PhotoError, build_photo_source
from vignette_bench.dataset_builder.placeholder import draw_placeholder
from vignette_bench.dataset_builder.records import spec_for
from vignette_bench.taxonomy import load_taxonomy


@pytest.fixture(scope="module")
def real_photos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = pytest.importorskip("skimage.data")
    d = tmp_path_factory.mktemp("photos")
    Image.fromarray(data.astronaut()).save(d / "astronaut.png")  # Eileen Collins, NASA portrait
    Image.fromarray(data.camera()).save(d / "camera.png")  # the "cameraman" photograph
    pd.DataFrame(
        {
            "image": ["astronaut.png", "camera.png"],
            "gender": ["female", "male"],
            "identity": ["woman", "man"],
            "activity": ["", ""],
            "dimension": ["gender", "gender"],
        }
    ).to_csv(d / "labels.csv", index=False)
    return d


def test_real_photos_become_a_source_whose_pairs_are_composed_and_asked_like_renders(
    real_photos: Path, tmp_path: Path
) -> None:
    src = build_photo_source(real_photos / "labels.csv", tmp_path / "src")
    index = pd.read_parquet(src / "renders" / "index.parquet")
    assert sorted(index["key"]) == ["female-gender-woman-portrait", "male-gender-man-portrait"]
    assert (index["model_id"] == "photo").all() and not index["placeholder"].any()
    ds = vignette.load_dataset(src, "portraits")
    assert len(ds) == 1
    row = ds[0]
    assert {row["identity_left"], row["identity_right"]} == {"woman", "man"}
    # the left half shows the photo labelled as the left identity (the astronaut is in colour, the cameraman grey)
    left = np.asarray(row["image"].convert("RGB"))[:, :300].astype(float)
    colourful = float(np.abs(left[..., 0] - left[..., 2]).mean()) > 10
    assert colourful == (row["identity_left"] == "woman")
    assert (
        cli(
            [
                "run",
                "--source",
                str(src),
                "--config",
                "portraits",
                "--model",
                "random",
                "--out",
                str(tmp_path / "run"),
                "--no-progress",
            ]
        )
        == 0
    )
    answers = pd.read_parquet(tmp_path / "run" / "responses.parquet")
    assert len(answers) > 0 and set(answers["key_left"]) | set(answers["key_right"]) == set(index["key"])
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert record["dataset"]["selection"]["source"] == str(src)


def test_several_photos_of_a_cell_become_its_variants(tmp_path: Path) -> None:
    tax = load_taxonomy()
    rows = []
    for identity in ("muslim", "hindu", "christian"):
        for k in range(2):
            spec = spec_for(tax, "female", identity, "cooking")
            image = draw_placeholder(spec, 80 + 16 * k, 64)  # photos come in any size
            name = f"{identity}-{k}.jpg"
            image.save(tmp_path / name, quality=90)
            rows.append({"image": name, "gender": "female", "identity": identity, "activity": "cooking"})
    pd.DataFrame(rows).to_csv(tmp_path / "labels.csv", index=False)
    src = build_photo_source(tmp_path / "labels.csv", tmp_path / "src")
    index = pd.read_parquet(src / "renders" / "index.parquet")
    assert sorted(index["variant"]) == [0, 0, 0, 1, 1, 1]
    ds = vignette.load_dataset(src, "identity_contrast", orders="both")
    assert len(ds) == 6 and {k.endswith("-v1") for k in ds["key_left"]} == {True, False}


def test_parquet_labels_with_image_bytes(real_photos: Path, tmp_path: Path) -> None:
    labels = pd.read_csv(real_photos / "labels.csv", dtype=str, keep_default_na=False)
    labels["image"] = [(real_photos / f).read_bytes() for f in labels["image"]]
    labels.to_parquet(tmp_path / "labels.parquet")
    src = build_photo_source(tmp_path / "labels.parquet", tmp_path / "src")
    assert len(vignette.load_dataset(src, "portraits")) == 1


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"identity": "wizard"}, r"row 2: unknown identity 'wizard'"),
        ({"gender": "other"}, r"row 2: gender 'other' is not one of"),
        ({"activity": "flying"}, r"row 2: unknown activity 'flying'"),
        ({"dimension": "religion"}, r"row 2: identity 'woman' is in dimension 'gender', not 'religion'"),
        ({"image": "missing.png"}, r"row 2: image file .*missing.png not found"),
        ({"image": "broken.png"}, r"row 2 \(.*broken.png\): the image cannot be decoded"),
        ({"gender": "male"}, r"row 2: identity 'woman' is not rendered as 'male'"),
    ],
)
def test_bad_rows_are_named_and_nothing_is_written(real_photos: Path, tmp_path: Path, row: dict, message: str) -> None:
    (tmp_path / "broken.png").write_bytes(b"not an image")
    for name in ("astronaut.png", "camera.png"):
        (tmp_path / name).write_bytes((real_photos / name).read_bytes())
    labels = pd.read_csv(real_photos / "labels.csv", dtype=str, keep_default_na=False)
    for k, v in row.items():
        labels.loc[0, k] = v
    labels.to_csv(tmp_path / "labels.csv", index=False)
    with pytest.raises(PhotoError, match=message):
        build_photo_source(tmp_path / "labels.csv", tmp_path / "src")
    assert not (tmp_path / "src").exists()


def test_cli_error_is_one_line_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "labels.csv").write_text("image,gender\nx.png,female\n")
    assert cli(["build", "photos", "--rows", str(tmp_path / "labels.csv"), "--out", str(tmp_path / "src")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "missing column(s) ['identity', 'activity']" in err
