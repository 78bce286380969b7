"""`make demo` end to end at its smallest: source, both models, metrics, report, and the labels."""

import json

import pandas as pd

from vignette_bench.cli import main as vignette


def test_demo_runs_end_to_end_and_says_it_is_placeholder(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("VIGNETTE_TINY_DIR", str(tmp_path / "tiny"))
    assert vignette(["demo", "--out", str(tmp_path / "out"), "--tiny-pairs", "1", "--random-pairs", "2"]) == 0
    printed = capsys.readouterr().out
    assert (
        "PLACEHOLDER IMAGES and UNTRAINED MODELS" in printed
        and "vignette run --source vignette-bench/vignette" in printed
    )
    out = tmp_path / "out"
    for model, n_pairs in (("random", 2), ("tiny-llava", 1)):
        for config in ("identity_contrast", "portraits"):
            frame = pd.read_parquet(out / "runs" / model / config / "responses.parquet")
            assert frame["pair_id"].nunique() == n_pairs and frame["valid"].any()
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics) == {"random", "tiny-llava"}
    assert not [name for results in metrics.values() for name, s in results.items() if "error" in s]
    assert "polarity/stereotype" in metrics["random"] and "selection_frequency/factuality" in metrics["random"]
    assert "placeholder images and untrained models" in (out / "report" / "report.md").read_text()
    assert (out / "report" / "report.html").stat().st_size > 0
    # it ends with the findings (or that none reaches a verdict, with what could be detected) and the page
    tail = printed[printed.index("Findings (placeholder images") :]
    assert "random (seed 0)" in tail and "llava" in tail
    assert "No identity reaches a verdict" in tail or "bias" in tail
    assert tail.rstrip().endswith(str(out / "report" / "report.html"))
