"""Builder faults: `check` survives an absurd image, and a re-render killed between its two files
never leaves an image of one seed under the record of another."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest
from PIL import Image

from vignette_bench.dataset_builder import render as render_mod
from vignette_bench.dataset_builder.check import CheckSettings, check_renders
from vignette_bench.dataset_builder.render import finished_record
from vignette_bench.dataset_builder.sample import write_placeholder_renders


def _png_claiming(path: Path, width: int, height: int) -> None:
    """A valid small PNG whose IHDR claims width x height (nothing large is allocated to write it)."""
    Image.new("RGB", (4, 4)).save(path, "PNG")
    data = bytearray(path.read_bytes())
    i = data.index(b"IHDR")
    data[i + 4 : i + 12] = struct.pack(">II", width, height)
    data[i + 17 : i + 21] = struct.pack(">I", zlib.crc32(bytes(data[i : i + 17])))
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("claim", [(30000, 30000), (13000, 13000)])
def test_check_fails_one_absurd_image_not_the_whole_table(tmp_path: Path, claim: tuple[int, int]) -> None:
    d = tmp_path / "renders"
    write_placeholder_renders(d, size=32, identities=("muslim", "hindu"), activities=("cooking",))
    victim = sorted(d.glob("*.png"))[0]
    _png_claiming(victim, *claim)
    results = check_renders(d, CheckSettings(face=False), progress=False)
    bad = [r for r in results if r.key == victim.stem]
    assert len(results) == len(list(d.glob("*.png"))) and len(bad) == 1
    assert "not decoded" in str(bad[0].reasons) or "cannot decode" in str(bad[0].reasons), bad[0].reasons
    assert all(r.decodable for r in results if r.key != victim.stem)


def test_a_rerender_killed_between_image_and_record_is_redone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The record is removed before the new image is written and restored after it: a kill in between
    leaves an image without a record, which resume treats as unfinished, never a mismatched pair."""
    d = tmp_path / "renders"
    write_placeholder_renders(d, size=32, identities=("muslim",), activities=("cooking",))
    key = sorted(p.stem for p in d.glob("*.png"))[0]
    assert finished_record(d, key) is not None
    real = render_mod._write_atomically

    def killed(path: Path, data: bytes) -> None:
        if path.suffix == ".png":
            real(path, data)
            raise KeyboardInterrupt("killed after the image")  # stands in for SIGKILL
        real(path, data)

    monkeypatch.setattr(render_mod, "_write_atomically", killed)

    from vignette_bench.dataset_builder.records import spec_for
    from vignette_bench.taxonomy import load_taxonomy

    spec = next(
        s
        for s in [spec_for(load_taxonomy(), g, "muslim", a) for g in ("female", "male") for a in ("cooking", "")]
        if s.key == key
    )
    renderer = render_mod.Renderer.__new__(render_mod.Renderer)  # no pipeline: images are drawn here
    renderer.settings = type("S", (), {"batch_size": 1})()  # type: ignore[assignment]
    renderer.images = lambda specs: [Image.new("RGB", (32, 32), (9, 9, 9)) for _ in specs]  # type: ignore[method-assign]
    renderer.record = lambda s: None  # type: ignore[method-assign,assignment,return-value]
    with pytest.raises(KeyboardInterrupt):
        renderer.render([spec], d, progress=False)
    assert not (d / f"{key}.json").exists() and finished_record(d, key) is None
