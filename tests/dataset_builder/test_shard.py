"""Sample source, shard writer, index and verify: layout, byte-exact index, bad input, crash and resume."""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import tarfile
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from vignette_bench.dataset_builder import shard as shard_mod
from vignette_bench.dataset_builder.sample import build_sample, write_placeholder_renders
from vignette_bench.dataset_builder.shard import ShardError, read_image_bytes, reindex, write_shards
from vignette_bench.dataset_builder.verify import verify_source
from vignette_bench.formats.render_index import REDUCED_COLUMNS
from vignette_bench.taxonomy import TAXONOMY_FILES

INDEX_COLUMNS = [
    "key",
    "shard",
    "offset",
    "length",
    "sha256",
    "format",
    "quality",
    "gender",
    "dimension",
    "identity",
    "surface_form",
    "activity",
    "kind",
    "prompt",
    "seed",
    "variant",
    "model_id",
    "placeholder",
    "width",
    "height",
]


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sample(tmp_path_factory.mktemp("sample") / "src", size=64)


@pytest.fixture()
def renders(tmp_path: Path) -> Path:
    """A small render folder: 2 identities of one dimension, 2 activities + portraits, both genders."""
    d = tmp_path / "renders_in"
    write_placeholder_renders(d, size=48, identities=("muslim", "hindu"), activities=("cooking", "driving"))
    return d


def test_sample_layout_and_coverage(sample: Path) -> None:
    assert (sample / "README.md").read_text().startswith("---\n")
    assert sorted(p.name for p in (sample / "taxonomy").iterdir()) == sorted(TAXONOMY_FILES)
    index = pd.read_parquet(sample / "renders/index.parquet")
    assert list(index.columns) == INDEX_COLUMNS + list(REDUCED_COLUMNS)  # 64-px renders: every copy null
    assert index.reduced_shard.isna().all()
    assert index.key.is_unique and index.placeholder.all()
    assert set(index.gender) == {"male", "female"}
    assert "gender" in set(index.dimension) and index.dimension.nunique() >= 3
    assert index.loc[index.kind == "activity", "activity"].nunique() >= 6
    # Every (gender, identity) has its portrait and every activity.
    n_act = index.loc[index.kind == "activity", "activity"].nunique()
    per = index.groupby(["gender", "identity"]).kind.value_counts().unstack()
    assert (per["portrait"] == 1).all() and (per["activity"] == n_act).all()
    # Shards are split by gender and dimension and named as FORMATS.md says.
    for row in index.itertuples():
        assert re.fullmatch(rf"renders/{row.gender}-{row.dimension}-\d{{5}}\.tar", row.shard)
        assert re.fullmatch(r"[a-z0-9_-]+", row.key)


def test_every_index_entry_reads_back_its_exact_bytes(sample: Path) -> None:
    index = pd.read_parquet(sample / "renders/index.parquet")
    for row in index.itertuples():
        data = read_image_bytes(str(sample), row.shard, row.offset, row.length)
        assert hashlib.sha256(data).hexdigest() == row.sha256
        image = Image.open(io.BytesIO(data))
        assert image.format == "JPEG" and image.size == (row.width, row.height)
    # ... and those bytes are exactly the tar member <key>.jpg, whose JSON record sits beside it.
    row = index.iloc[-1]
    with tarfile.open(sample / row.shard) as tar:
        member = tar.getmember(f"{row.key}.jpg")
        assert (member.offset_data, member.size) == (row.offset, row.length)
        record = json.loads(tar.extractfile(f"{row.key}.json").read())  # type: ignore[union-attr]
    assert record["placeholder"] is True and record["key"] == row.key and record["quality"] == row.quality
    assert verify_source(str(sample), progress=False) == []


def test_plain_datasets_load_renders_offline(sample: Path, tmp_path: Path) -> None:
    import datasets

    # the card's configs are all parquet (one builder per repository): shards take the webdataset builder
    shards = {"test": f"{sample}/renders/*.tar"}
    ds = datasets.load_dataset("webdataset", data_files=shards, split="test", cache_dir=str(tmp_path / "cache"))
    index = pd.read_parquet(sample / "renders/index.parquet")
    assert sorted(ds["__key__"]) == sorted(index.key)
    assert set(ds.column_names) == {"jpg", "json", "__key__", "__url__"}
    row = ds[0]
    assert row["jpg"].size == (64, 64) and row["json"]["placeholder"] is True
    assert row["json"]["key"] == row["__key__"]


def test_shards_are_byte_reproducible_and_size_capped(renders: Path, tmp_path: Path) -> None:
    a = write_shards(renders, tmp_path / "a", max_shard_bytes=8 * 1024, progress=False)
    b = write_shards(renders, tmp_path / "b", max_shard_bytes=8 * 1024, progress=False)
    assert a.written == b.written and len(a.written) > 2  # the cap splits each group into several shards
    for name in a.written:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
        assert (tmp_path / "a" / name).stat().st_size <= 8 * 1024 or len(
            tarfile.open(tmp_path / "a" / name).getnames()
        ) == 2
    assert verify_source(str(tmp_path / "a"), progress=False) == []


def test_webp_format_is_recorded(renders: Path, tmp_path: Path) -> None:
    write_shards(renders, tmp_path / "w", fmt="webp", quality=70, progress=False)
    index = pd.read_parquet(tmp_path / "w/renders/index.parquet")
    assert set(index.format) == {"webp"} and set(index.quality) == {70}
    row = index.iloc[0]
    assert (
        Image.open(io.BytesIO(read_image_bytes(str(tmp_path / "w"), row.shard, row.offset, row.length))).format
        == "WEBP"
    )
    with pytest.raises(ShardError, match="holds webp images"):
        write_shards(renders, tmp_path / "w", fmt="jpeg", progress=False)


def test_crash_leaves_no_half_shard_and_rerun_resumes(
    renders: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    real_add, calls = shard_mod._add, {"n": 0}

    def crashing_add(tar, name, data):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 9:  # in the middle of the third shard
            raise KeyboardInterrupt("simulated crash")
        real_add(tar, name, data)

    monkeypatch.setattr(shard_mod, "_add", crashing_add)
    with pytest.raises(KeyboardInterrupt):
        write_shards(renders, out, max_shard_bytes=8 * 1024, progress=False)
    monkeypatch.setattr(shard_mod, "_add", real_add)
    finished = sorted((out / "renders").glob("*.tar"))
    assert finished and not list((out / "renders").glob(".*"))  # whole shards only, no temp file left
    for p in finished:  # each finished shard is a complete, readable tar
        names = tarfile.open(p).getnames()
        assert len(names) % 2 == 0
    stamps = {p.name: p.stat().st_mtime_ns for p in finished}
    # A killed process (no cleanup) leaves a hidden temp file: the rerun removes it.
    (out / "renders" / ".male-religion-00009.tar.tmp-1").write_bytes(b"half")
    report = write_shards(renders, out, max_shard_bytes=8 * 1024, progress=False)
    assert set(report.kept) == {f"renders/{n}" for n in stamps}
    assert {p.name: p.stat().st_mtime_ns for p in finished} == stamps  # finished shards untouched
    index = pd.read_parquet(out / "renders/index.parquet")
    expected = write_shards(renders, tmp_path / "fresh", max_shard_bytes=8 * 1024, progress=False)
    fresh = pd.read_parquet(tmp_path / "fresh/renders/index.parquet")
    assert sorted(index.key) == sorted(fresh.key) and index.key.is_unique
    assert dict(zip(index.key, index.sha256)) == dict(zip(fresh.key, fresh.sha256))
    assert expected.total == report.total
    assert verify_source(str(out), progress=False) == []
    # Nothing to do on a third run.
    assert write_shards(renders, out, max_shard_bytes=8 * 1024, progress=False).packed == 0


def test_rerender_after_packing_is_refused(renders: Path, tmp_path: Path) -> None:
    write_shards(renders, tmp_path / "o", progress=False)
    path = renders / "male-religion-hindu-cooking.json"
    rec = json.loads(path.read_text())
    path.write_text(json.dumps({**rec, "seed": rec["seed"] + 1}))
    with pytest.raises(
        ShardError, match=r"male-religion-00000\.tar: key 'male-religion-hindu-cooking' was packed from an older render"
    ):
        write_shards(renders, tmp_path / "o", progress=False)


def _edit(path: Path, **changes: object) -> None:
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


@pytest.mark.parametrize(
    "damage, message",
    [
        (
            lambda d: (d / "female-religion-muslim-cooking.png").write_bytes(b"not an image"),
            r"female-religion-muslim-cooking\.png: key 'female-religion-muslim-cooking': image cannot be decoded.*re-run render",
        ),
        (
            lambda d: (d / "male-religion-hindu-driving.json").unlink(),
            r"male-religion-hindu-driving\.json: JSON record missing; re-render",
        ),
        (
            lambda d: (d / "male-religion-hindu-portrait.json").write_text("{not json"),
            r"male-religion-hindu-portrait\.json: malformed JSON record",
        ),
        (
            lambda d: shutil.copyfile(d / "male-religion-hindu-cooking.png", d / "male-religion-hindu-cooking.jpg"),
            r"male-religion-hindu-cooking\.png: duplicate key 'male-religion-hindu-cooking'",
        ),
        (
            lambda d: _edit(d / "female-religion-hindu-cooking.json", identity="martian"),
            r"female-religion-hindu-cooking\.json: key 'female-religion-hindu-cooking': unknown identity 'martian'",
        ),
        (
            lambda d: _edit(d / "female-religion-hindu-cooking.json", activity="juggling"),
            r"female-religion-hindu-cooking\.json: key 'female-religion-hindu-cooking': unknown activity 'juggling'",
        ),
        (
            lambda d: _edit(d / "female-religion-hindu-cooking.json", width=99),
            r"female-religion-hindu-cooking\.png: key 'female-religion-hindu-cooking': image is 48x48 but the record says 99x48",
        ),
        (
            lambda d: _edit(d / "female-religion-hindu-cooking.json", seed="7"),
            r"female-religion-hindu-cooking\.json: field 'seed' is '7', expected int",
        ),
    ],
    ids=[
        "corrupt-image",
        "missing-json",
        "malformed-json",
        "duplicate-key",
        "unknown-identity",
        "unknown-activity",
        "wrong-size",
        "wrong-type",
    ],
)
def test_bad_input_names_file_and_key_and_writes_nothing(renders: Path, tmp_path: Path, damage, message: str) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "o"
    write_shards(renders, out, progress=False)
    before = {p.name: p.read_bytes() for p in (out / "renders").iterdir()}
    damage(renders)
    with pytest.raises(ShardError, match=message):
        write_shards(renders, out, progress=False)
    assert {p.name: p.read_bytes() for p in (out / "renders").iterdir()} == before  # nothing already written is lost


def test_verify_finds_index_and_byte_disagreements(renders: Path, tmp_path: Path) -> None:
    out = tmp_path / "v"
    write_shards(renders, out, progress=False)
    index_path = out / "renders/index.parquet"
    index = pd.read_parquet(index_path)
    row = index.iloc[3]
    # Flip one byte inside an image member: the sha256 no longer matches.
    shard = out / row.shard
    data = bytearray(shard.read_bytes())
    data[row.offset + row.length // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    problems = verify_source(str(out), progress=False)
    assert [(p.shard, p.key) for p in problems] == [(row.shard, row.key)] and "sha256" in problems[0].message
    data[row.offset + row.length // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    # An index that disagrees with the shard (wrong offset, missing row, duplicate row).
    bad = index.copy()
    bad.loc[1, "offset"] += 512
    bad = pd.concat([bad.drop(index=[2]), bad.iloc[[0]]])
    bad.to_parquet(index_path, index=False)
    messages = {(p.key, p.message.split(";")[0]) for p in verify_source(str(out), progress=False)}
    assert any(k == index.key[1] and "index says offset" in m for k, m in messages)
    assert any(k == index.key[2] and "not in the index" in m for k, m in messages)
    assert any(k == index.key[0] and "appears 2 times" in m for k, m in messages)
    assert all("--reindex" in p.message for p in verify_source(str(out), progress=False))
    reindex(out)
    assert verify_source(str(out), progress=False) == []


def test_cli_sample_and_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vignette_bench.cli import main

    assert (
        main(
            [
                "build",
                "sample",
                "--out",
                str(tmp_path / "s"),
                "--size",
                "32",
                "--identities",
                "man,woman,old,young",
                "--activities",
                "cooking,driving",
            ]
        )
        == 0
    )
    assert "renders/index.parquet" in capsys.readouterr().out
    assert main(["build", "verify", "--source", str(tmp_path / "s")]) == 0
    assert "ok: all 18 index rows match" in capsys.readouterr().out


def test_cli_shard_with_card_then_verify_over_http(renders: Path, tmp_path: Path) -> None:
    """A source served over HTTP (with Range support, like the Hub or a CDN) verifies by ranged reads."""
    import functools
    import http.server
    import threading

    from vignette_bench.cli import main

    src = tmp_path / "site" / "src"
    assert main(["build", "shard", str(renders), "--out", str(src), "--card", "--max-shard-mb", "0.01"]) == 0
    assert (src / "README.md").read_text().count("config_name: index") == 1
    assert sorted(p.name for p in (src / "taxonomy").iterdir()) == sorted(TAXONOMY_FILES)

    class RangeHandler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def send_head(self):  # type: ignore[no-untyped-def]
            rng = self.headers.get("Range")
            path = Path(self.translate_path(self.path))
            if not rng or not path.is_file():
                return super().send_head()
            data = path.read_bytes()
            start, _, end = rng.removeprefix("bytes=").partition("-")
            a, b = int(start), min(int(end) if end else len(data) - 1, len(data) - 1)
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {a}-{b}/{len(data)}")
            self.send_header("Content-Length", str(b - a + 1))
            self.end_headers()
            return io.BytesIO(data[a : b + 1])

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(RangeHandler, directory=str(tmp_path / "site"))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/src"
        assert verify_source(url, progress=False) == []
        index = pd.read_parquet(src / "renders/index.parquet")
        row = index.iloc[5]
        assert hashlib.sha256(read_image_bytes(url, row.shard, row.offset, row.length)).hexdigest() == row.sha256
        # Damage one image on the server: verify over HTTP names its shard and key.
        shard = src / row.shard
        data = bytearray(shard.read_bytes())
        data[row.offset + 10] ^= 0xFF
        shard.write_bytes(bytes(data))
        assert [(p.shard, p.key) for p in verify_source(url, progress=False)] == [(row.shard, row.key)]
    finally:
        server.shutdown()


def test_shard_packs_only_renders_that_passed_check(
    renders: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from vignette_bench.cli import main
    from vignette_bench.dataset_builder.check import CheckSettings, check_renders, write_table

    (renders / "male-religion-hindu-cooking.png").write_bytes(b"broken")  # fails check, would stop shard
    write_table(
        check_renders(renders, CheckSettings(face=False, min_std=0), progress=False), tmp_path / "check.parquet"
    )
    assert (
        main(["build", "shard", str(renders), "--out", str(tmp_path / "o"), "--check", str(tmp_path / "check.parquet")])
        == 0
    )
    assert "skipped (failed check): male-religion-hindu-cooking" in capsys.readouterr().out
    index = pd.read_parquet(tmp_path / "o/renders/index.parquet")
    assert len(index) == 11 and "male-religion-hindu-cooking" not in set(index.key)
    # A render added after the check was run is refused until it is checked.
    shutil.copyfile(renders / "male-religion-hindu-driving.png", renders / "male-religion-hindu-eating.png")
    # (ShardError is a VignetteError: the CLI ends in `error: …` and exit 2, not a traceback)
    args = ["build", "shard", str(renders), "--out", str(tmp_path / "o"), "--check", str(tmp_path / "check.parquet")]
    assert main(args) == 2
    assert re.search("error: .*were not checked.*male-religion-hindu-eating", capsys.readouterr().err)
