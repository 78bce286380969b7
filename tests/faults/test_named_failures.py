"""Bombs, lying tar headers and unwritable output folders end in a named error, not a traceback
(issue 24, item 4)."""

from __future__ import annotations

import io
import struct
import tarfile
import zlib
from pathlib import Path

import pytest

from vignette_bench.cli import main as vignette
from vignette_bench.dataset_builder.shard import ShardError, _load_image, scan_shard


def _png_header(width: int, height: int) -> bytes:
    """A PNG whose IHDR claims width x height (no pixel data follows): a decompression bomb's header."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IEND", b"")


def test_a_30000_square_png_is_a_shard_error(tmp_path: Path) -> None:
    bomb = tmp_path / "renders" / "k.png"
    bomb.parent.mkdir()
    bomb.write_bytes(_png_header(30000, 30000))
    with pytest.raises(ShardError, match="k.png.*key 'k'"):
        _load_image(bomb, "k")


def test_a_tar_header_claiming_8_gib_is_a_shard_error(tmp_path: Path, capsys) -> None:
    info = tarfile.TarInfo("k.jpg")
    info.size = 8 * 2**30
    (tmp_path / "shards").mkdir()
    (tmp_path / "shards" / "s.tar").write_bytes(info.tobuf(format=tarfile.GNU_FORMAT) + b"\xff" * 1024)
    with pytest.raises(ShardError, match=r"s\.tar: member 'k.jpg' claims 8589934592 bytes"):
        scan_shard(str(tmp_path), "shards/s.tar")
    truncated = tarfile.TarInfo("k.jpg")
    truncated.size = 4096  # within the cap, but the file ends first
    (tmp_path / "shards" / "t.tar").write_bytes(truncated.tobuf(format=tarfile.GNU_FORMAT) + b"\xff" * 100)
    with pytest.raises(ShardError, match=r"t\.tar: not a readable tar"):
        scan_shard(str(tmp_path), "shards/t.tar")


def test_an_unwritable_output_folder_is_named(tmp_path: Path, capsys) -> None:
    (tmp_path / "a-file").write_text("")
    out = tmp_path / "a-file" / "src"  # below a regular file: no user, root included, can write there
    assert vignette(["build", "sample", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and str(tmp_path / "a-file") in err and "Traceback" not in err


def test_vignette_debug_keeps_the_traceback(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("VIGNETTE_DEBUG", "1")
    with pytest.raises(OSError):
        vignette(["build", "sample", "--out", str(tmp_path / "a-file" / "src")])


def test_known_failures_and_bugs_are_told_apart() -> None:
    from vignette_bench.errors import known_failure

    assert known_failure(tarfile.ReadError("unexpected end of data")) is not None
    assert known_failure(KeyError("x")) is None  # a bug keeps its traceback
    assert known_failure(io.UnsupportedOperation("x")) is not None  # an OSError


def test_verify_over_http_with_a_lying_content_length_names_the_shard(source: Path, capsys) -> None:
    from tests.loader.test_source_faults import serve

    def lying(handler, rel: str) -> bool:
        if not rel.endswith(".tar"):
            return False
        data = (source / rel).read_bytes()
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(data) + 100000))  # more than the body that follows
        handler.end_headers()
        if handler.command == "GET":
            handler.wfile.write(data[: len(data) // 2])
            handler.wfile.flush()
            handler.close_connection = True
        return True

    with serve(source, lying) as url:
        code = vignette(["build", "verify", "--source", url])
    out = capsys.readouterr()
    assert code == 1 and "Traceback" not in out.err
    assert ".tar: cannot be read (ClientPayloadError" in out.out and "problem(s) in http://127.0.0.1" in out.out


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda f: f.drop(columns=["sha256"]), "missing column(s) ['sha256']"),
        (lambda f: f.drop(columns=["kind"]), "missing column(s) ['kind']"),
        (lambda f: f.assign(offset=[[int(x)] for x in f["offset"]]), "column 'offset' has type list"),
    ],
)
def test_build_verify_on_a_malformed_index_lists_the_problem(source: Path, capsys, change, named: str) -> None:
    import pandas as pd

    index = source / "renders" / "index.parquet"
    change(pd.read_parquet(index)).to_parquet(index)
    assert vignette(["build", "verify", "--source", str(source)]) == 1  # before: AttributeError / TypeError
    out = capsys.readouterr().out
    assert named in out and "--reindex" in out


def test_news_results_on_a_corrupt_judgements_line(tmp_path: Path, capsys) -> None:
    (tmp_path / "a.jsonl").write_text("")
    (tmp_path / "j.jsonl").write_text('{"broken\n{"also": 1}\n')  # a broken line that is not the last
    args = ["--answers", str(tmp_path / "a.jsonl"), "--judgements", str(tmp_path / "j.jsonl")]
    assert vignette(["news", "results", *args, "--out", str(tmp_path / "o")]) == 2  # before: LogCorrupt traceback
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "j.jsonl, line 1: not valid JSON" in err
