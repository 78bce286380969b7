"""vignette_bench.eval.explain.pictures: the three panels for one question, from a run folder with attention records."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image, ImageDraw

from vignette_bench.cli import main as vignette
from vignette_bench.eval.explain.attention import attention_schema
from vignette_bench.eval.explain.pictures import ExplainError, explain


def main(argv):
    """`vignette explain ARGV` in-process."""
    return vignette(["explain", *argv])


BASE = pa.schema(
    [("question_id", pa.string()), ("pair_id", pa.string()), ("context", pa.string()), ("choice", pa.string())]
)


def _pair() -> Image.Image:
    img = Image.new("RGB", (112, 56), (230, 220, 200))
    d = ImageDraw.Draw(img)
    d.ellipse((10, 5, 40, 50), fill=(200, 60, 60))
    d.ellipse((70, 5, 100, 50), fill=(60, 60, 200))
    return img


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A run folder with two attention records (a known pattern on a LLaVA layout) and one text-only row."""
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig
    from transformers.models.llava.image_processing_pil_llava import LlavaImageProcessorPil

    from vignette_bench.eval.explain.attention import image_layout, summarize

    config = LlavaConfig(vision_config=CLIPVisionConfig(image_size=28, patch_size=7), text_config=LlamaConfig())
    ip = LlavaImageProcessorPil(size={"height": 28, "width": 28}, do_center_crop=False)
    layout = image_layout(config, ip, (56, 112))
    rng = np.random.default_rng(0)
    rows = []
    for qid in ("q0", "q1"):
        weights = rng.dirichlet(np.ones(20), size=(3, 1, 4, 20))  # 3 layers, 4 heads, 20 keys (16 image tokens)
        s = summarize(list(weights), np.arange(2, 18), layout, [18, 19])
        rows.append({"question_id": qid, "pair_id": "p0", "context": "cooking", "choice": "left", **s.to_record()})
    rows.append({"question_id": "q-text", "pair_id": "p0", "context": "cooking", "choice": "left"})
    run = tmp_path_factory.mktemp("run")
    schema = pa.schema([*BASE, *attention_schema()])
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), run / "responses.parquet")
    return run


def test_three_panels_with_the_image(run_dir, tmp_path):
    out = explain(run_dir, "q0", image=_pair(), out=tmp_path)
    names = [p.name for p in out.panels]
    assert names == ["q0-overlay.png", "q0-mean.png", "q0-heads.png"] and out.image_note == ""
    for path in (*out.panels, out.combined):
        with Image.open(path) as im:
            assert im.width > 100 and im.height > 100
            assert np.asarray(im.convert("L")).std() > 5  # something was drawn


def test_without_image_or_source_draws_two_panels_and_says_why(run_dir, tmp_path, capsys):
    assert main([str(run_dir), "--question", "q1", "--out", str(tmp_path), "--layer", "-2"]) == 0
    captured = capsys.readouterr()
    assert "pair image unavailable" in captured.err and "--image" in captured.err
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == ["q1-heads.png", "q1-mean.png", "q1-panels.png"]


def test_pair_image_is_composed_from_the_run(run_dir, tmp_path, monkeypatch):
    import vignette_bench.eval.explain.pictures as ex

    seen = {}

    def fake_pair_image(rd, pair_id):  # the composition itself is vignette's and the runner's (tested there)
        seen["pair_id"] = pair_id
        return _pair()

    monkeypatch.setattr(ex, "pair_image", fake_pair_image)
    out = explain(run_dir, "q0", out=tmp_path)
    assert seen == {"pair_id": "p0"} and out.panels[0].name == "q0-overlay.png"


def test_bad_input_is_named(run_dir, tmp_path, capsys):
    with pytest.raises(ExplainError, match="no answer to question 'nope'"):
        explain(run_dir, "nope", out=tmp_path)
    with pytest.raises(KeyError, match="q-text has no attention record"):
        explain(run_dir, "q-text", out=tmp_path)
    assert main([str(run_dir), "--question", "q0", "--layer", "7", "--out", str(tmp_path)]) == 2
    assert "the model has 3 layers" in capsys.readouterr().err


def test_reads_the_run_log_before_merge(tmp_path, run_dir):
    row = pq.read_table(run_dir / "responses.parquet").to_pylist()[0]
    log = tmp_path / "run" / "log"
    log.mkdir(parents=True)
    (log / "part-00000.jsonl").write_text(json.dumps(row) + "\n")
    out = explain(tmp_path / "run", "q0", image=_pair(), out=tmp_path / "png")
    assert len(out.panels) == 3


def test_demo_run_with_attention_recording_end_to_end(tmp_path, tmp_path_factory):
    """Runner + transformers adapter (record_attention=True) on tiny LLaVA-NeXT over the placeholder source:
    every image answer gets left/right shares in responses.parquet, and explain re-composes the pair."""
    from vignette_bench.dataset_builder.sample import build_sample
    from vignette_bench.eval.adapters.tiny import build_tiny_vlm
    from vignette_bench.eval.adapters.transformers_adapter import TransformersAdapter
    from vignette_bench.eval.runtime.questions import Variants
    from vignette_bench.eval.runtime.run import RunSettings, run

    source = build_sample(
        tmp_path / "src", size=48, identities=("man", "woman", "old", "young"), activities=("cooking", "driving")
    )
    model = build_tiny_vlm("llava_next", tmp_path_factory.getbasetemp() / "tiny-vlm" / "llava_next")  # shared
    adapter = TransformersAdapter(model, record_attention=True)
    settings = RunSettings(
        source=str(source),
        config="identity_contrast",
        model="tiny-llava-next",
        seed=1,
        paradigms=("decision",),
        variants=Variants((0,), ("identity",), ("image", "text")),
        sample=1,
        image_size=(112, 56),
    )
    result = run(settings, tmp_path / "run", adapter=adapter, progress=False)
    rows = pq.read_table(result.responses).to_pylist()
    image_rows = [r for r in rows if r["modality"] == "image" and r["valid"]]
    assert image_rows and all(r["attn_left_share"] is None for r in rows if r["modality"] == "text")
    for r in image_rows:
        assert r["attn_left_share"] + r["attn_seam_share"] + r["attn_right_share"] == pytest.approx(1)
    out = explain(tmp_path / "run", image_rows[0]["question_id"], out=tmp_path / "png")
    assert out.image_note == "" and [p.name.rsplit("-", 1)[1] for p in out.panels] == [
        "overlay.png",
        "mean.png",
        "heads.png",
    ]
    # and the report's section for the run: tables and one figure of the most unequal answer
    from vignette_bench.eval.explain.pictures import attention_section

    section = attention_section(tmp_path / "run", examples=1)
    assert len(section.figures) == 1 and section.figures[0].png.startswith(b"\x89PNG")
    titles = [t for t, _ in section.tables]
    assert any("chosen person" in t for t in titles) and any("per layer" in t for t in titles)
    layers = dict(section.tables)["Mean attention shares per layer"]
    assert len(layers) == 2 and np.allclose(layers[["left", "seam", "right"]].sum(axis=1), 1, atol=1e-3)


def test_attention_section_is_none_without_records(tmp_path):
    from vignette_bench.eval.explain.pictures import attention_section

    assert attention_section(tmp_path) is None  # no responses yet
    pq.write_table(
        pa.Table.from_pylist([{"question_id": "q", "pair_id": "p", "context": "", "choice": "a"}], schema=BASE),
        tmp_path / "responses.parquet",
    )
    assert attention_section(tmp_path) is None  # a run without record_attention


def test_pair_image_recomposes_the_pair_a_real_run_saw(tmp_path):
    """The real path: run.json's source and plan.parquet's keys give back the run's composed pair."""
    import numpy as np

    import vignette
    from vignette_bench.dataset_builder.sample import build_sample
    from vignette_bench.eval.explain.pictures import pair_image
    from vignette_bench.eval.runtime.run import RunSettings, run

    source = build_sample(tmp_path / "src", size=64, identities=("muslim", "hindu"), activities=("cooking",))
    run_dir = tmp_path / "run"
    run(RunSettings(source=str(source), config="identity_contrast", model="random", seed=0), run_dir, batch_size=8)
    row = vignette.load_dataset(str(source), "identity_contrast")[0]
    got = pair_image(run_dir, row["pair_id"])
    assert got.size == row["image"].size
    assert np.array_equal(np.asarray(got.convert("RGB")), np.asarray(row["image"].convert("RGB")))
