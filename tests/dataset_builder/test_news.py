"""Packaging the news subset: validation of user rows, parquet with image bytes, the card's news config.

Each load gets its own cache_dir: offline, `datasets` may reuse a cached build of another folder with
the same name and config (it keys the cache by name when it cannot resolve the module online).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import datasets
import pytest
from PIL import Image

from vignette_bench.dataset_builder.news import (
    NewsRowError,
    build_news,
    build_news_sample,
    ensure_card_config,
    news_config_yaml,
    write_news_sample_inputs,
)


def _inputs(tmp_path: Path, rows: list[dict], fmt: str = "jsonl") -> tuple[Path, Path]:
    images = tmp_path / "images"
    images.mkdir()
    Image.new("RGB", (8, 6), (200, 10, 10)).save(images / "a.jpg")
    Image.new("RGB", (8, 6), (10, 200, 10)).save(images / "b.png")
    (images / "broken.jpg").write_bytes(b"not an image at all")
    path = tmp_path / f"rows.{fmt}"
    if fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        names = sorted({k for r in rows for k in r})
        with path.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=names)
            writer.writeheader()
            writer.writerows(rows)
    return images, path


def _row(i: str, image: str = "a.jpg", **kw: str) -> dict:
    return {
        "id": i,
        "image_file": image,
        "question": f"What is happening in {i}?",
        "reference_answer": "People at a table.",
        "attribute": "gender",
        **kw,
    }


def test_sample_loads_with_plain_datasets(tmp_path: Path) -> None:
    report = build_news_sample(tmp_path / "src")
    assert report.written == 10 and report.placeholder and not report.skipped
    ds = datasets.load_dataset(str(tmp_path / "src"), "news", split="test", cache_dir=str(tmp_path / "cache"))
    assert len(ds) == 10 and set(ds["attribute"]) == {"age", "gender", "race", "occupation", "sport"}
    assert all(ds["placeholder"]) and all("PLACEHOLDER" in o for o in ds["source_outlet"])
    image = ds[0]["image"]
    assert image.format == "PNG" and image.size == (160, 120)


def test_user_rows_csv_roundtrip_keeps_bytes_and_tags(tmp_path: Path) -> None:
    images, rows = _inputs(
        tmp_path,
        [
            _row("n1", gender="female", source_outlet="Reuters", url="https://x/1"),
            _row("n2", "b.png", attribute="Sports", sport="soccer"),
        ],
        fmt="csv",
    )
    report = build_news(images, rows, tmp_path / "src")
    assert report.written == 2 and len(report.files) == 1
    ds = datasets.load_dataset(str(tmp_path / "src"), "news", split="test", cache_dir=str(tmp_path / "cache"))
    first, second = ds[0], ds[1]
    assert first["id"] == "n1" and first["gender"] == "female" and first["source_outlet"] == "Reuters"
    assert second["attribute"] == "sport" and second["sport"] == "soccer" and not second["placeholder"]
    raw = ds.cast_column("image", datasets.Image(decode=False))[0]["image"]
    assert raw["bytes"] == (images / "a.jpg").read_bytes() and raw["path"] == "a.jpg"


@pytest.mark.parametrize(
    "bad, reason",
    [
        (_row("x", "missing.jpg"), "not found"),
        (_row("x", "broken.jpg"), "unreadable"),
        (_row("x", attribute="religion"), "unknown attribute 'religion'"),
        (_row("n1"), "duplicate id 'n1'"),
        ({**_row("x"), "question": "  "}, "empty question"),
        (_row("x", "../outside.jpg"), "outside the images folder"),
    ],
)
def test_bad_row_is_named_or_skipped_and_counted(tmp_path: Path, bad: dict, reason: str) -> None:
    images, rows = _inputs(tmp_path, [_row("n1"), bad])
    with pytest.raises(NewsRowError, match="rows.jsonl line 2") as error:
        build_news(images, rows, tmp_path / "src")
    assert reason in str(error.value) and "--skip-bad" in str(error.value)
    report = build_news(images, rows, tmp_path / "src", skip_bad=True)
    assert report.written == 1 and len(report.skipped) == 1 and reason in report.skipped[0].reason
    logged = [json.loads(line) for line in (tmp_path / "src/news/skipped.jsonl").read_text().splitlines()]
    assert logged[0]["where"].startswith("rows.jsonl line 2")


def test_unknown_column_is_an_error(tmp_path: Path) -> None:
    images, rows = _inputs(tmp_path, [{**_row("n1"), "caption": "x"}])
    with pytest.raises(NewsRowError, match=r"unknown column\(s\) \['caption'\]"):
        build_news(images, rows, tmp_path / "src")


def test_rebuild_replaces_shards_and_card_merge_is_additive(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "README.md").write_text(
        "---\nconfigs:\n- config_name: renders\n  data_files: renders/index.parquet\n"
        "license: cc-by-4.0\n---\n\n# Card body stays\n"
    )
    images, rows = _inputs(tmp_path, [_row(f"n{i}") for i in range(5)])
    build_news(images, rows, src, rows_per_shard=2)
    assert len(list((src / "news").glob("*.parquet"))) == 3
    build_news(images, rows, src, rows_per_shard=10)
    assert len(list((src / "news").glob("*.parquet"))) == 1
    ensure_card_config(src)  # idempotent
    card = (src / "README.md").read_text()
    assert card.count("config_name: news") == 1 and "config_name: renders" in card
    assert "license: cc-by-4.0" in card and card.endswith("# Card body stays\n")
    assert "config_name: news" in news_config_yaml()


def test_cli_builds_from_sample_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vignette_bench.cli import main

    images, rows = write_news_sample_inputs(tmp_path / "in")
    assert main(["build", "news", "--images", str(images), "--rows", str(rows), "--out", str(tmp_path / "src")]) == 0
    assert "wrote 10 rows" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="pass --images"):
        main(["build", "news", "--out", str(tmp_path / "src")])


def test_builder_card_declares_the_same_news_config(tmp_path: Path) -> None:
    import yaml

    from vignette_bench.dataset_builder.card import configs_yaml
    from vignette_bench.dataset_builder.sample import build_sample

    src = build_sample(tmp_path / "src", size=32, identities=("muslim", "hindu"), activities=("cooking",), specs=False)
    news = [
        {k: v for k, v in c.items() if k != "description"}  # the description carries the files' digest
        for c in yaml.safe_load(configs_yaml(src))
        if c["config_name"] == "news"
    ]
    assert news == yaml.safe_load(news_config_yaml())


def test_url_source_is_read_through_the_manifest(tmp_path: Path) -> None:
    import functools
    import http.server
    import threading

    from vignette_bench.eval.news.data import load_news, news_items

    build_news_sample(tmp_path / "src")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path / "src"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        remote = news_items(load_news(url))
        local = news_items(load_news(tmp_path / "src"))
        assert [(i.id, i.image_sha256) for i in remote] == [(i.id, i.image_sha256) for i in local]
        (tmp_path / "src" / "news" / "manifest.json").unlink()
        with pytest.raises(FileNotFoundError, match="manifest"):
            load_news(url)
    finally:
        server.shutdown()
        server.server_close()
