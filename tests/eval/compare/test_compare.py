"""vignette compare: deltas per identity with cluster-robust CIs, the paper's four summary numbers, the
CLI, and the report section. Checked on runs that differ by a known amount."""

from __future__ import annotations

import re
import subprocess
import sys
from html import unescape
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests import REPO_ROOT
from vignette_bench.eval.compare.comparison import compare_frames
from vignette_bench.eval.simulate import SimSpec, simulate, write_run

SMALL = dict(dimensions=("religion",), genders=("female", "male"), n_activities=4, n_traits=4)


def flipped(frame: pd.DataFrame) -> pd.DataFrame:
    """Every valid two-way answer turned to the other person (probabilities reversed)."""
    out = frame.copy()
    two = out["paradigm"].isin(["perception", "decision", "stereotype"]) & out["valid"]
    out.loc[two, "chose_left"] = ~out.loc[two, "chose_left"].astype(bool)
    out.loc[two, "selected_identity"] = [
        c[0] if left else c[1] for c, left in zip(out.loc[two, "candidates"], out.loc[two, "chose_left"])
    ]
    out.loc[two, "probabilities"] = pd.Series(
        [None if p is None else list(p)[::-1] for p in out.loc[two, "probabilities"]],
        index=out.index[two],
        dtype=object,
    )
    return out


@pytest.fixture(scope="module")
def run_a() -> pd.DataFrame:
    return simulate(SimSpec(seed=1, pair_image_sd=1.1, p_left=0.35, **SMALL))


def test_a_run_against_its_mirror_gives_exact_deltas_and_the_papers_four_numbers(run_a: pd.DataFrame) -> None:
    c = compare_frames(run_a, flipped(run_a), "A", "flipped")
    ident = c.identities
    assert len(ident) and c.unmatched.empty
    # S_flipped = 100 - S_A on each side, so the side-balanced delta is exactly 2 S_A - 100
    np.testing.assert_allclose(ident["value_b"], 100.0 - ident["value_a"], atol=1e-9)
    np.testing.assert_allclose(ident["delta"], 2.0 * ident["value_a"] - 100.0, atol=1e-9)
    for family, g in ident.groupby("family"):
        row = c.summary.set_index("family").loc[family]
        d = g["delta"].to_numpy()
        assert row["mean_signed_delta"] == pytest.approx(d.mean())
        assert row["mean_abs_delta"] == pytest.approx(np.abs(d).mean())
        assert row["rmse"] == pytest.approx(np.sqrt((d**2).mean()))
        assert row["max_abs_delta"] == pytest.approx(np.abs(d).max())
        assert row["n_identities"] == len(g)
    assert ((ident["ci_low"] <= ident["delta"]) & (ident["delta"] <= ident["ci_high"])).all()


def test_identical_runs_differ_by_nothing(run_a: pd.DataFrame) -> None:
    c = compare_frames(run_a, run_a, "A", "A again")
    assert (c.identities["delta"] == 0).all() and (c.identities["q_value"] >= 0.05).all()
    assert (
        (c.summary[["mean_abs_delta", "rmse", "max_abs_delta", "rms_noise_corrected", "n_significant"]] == 0)
        .all()
        .all()
    )


def test_a_planted_difference_is_found_and_its_interval_covers_the_truth() -> None:
    """Run A prefers muslim at P = 0.75 against any partner (true side-balanced S = 75), run B at 0.5:
    the true delta is 25 pp. Five seeds: found with the right sign every time, covered by the 95% CI in
    at least four (P(fewer than 4 of 5) = 2.3% at exact 95% coverage)."""
    spec = dict(SMALL, n_activities=12)
    covered = 0
    for seed in range(5):
        a = simulate(SimSpec(seed=2 + 10 * seed, planted=(("muslim", 0.75),), **spec))
        b = simulate(SimSpec(seed=3 + 10 * seed, **spec))
        ident = compare_frames(a, b, "planted", "null").identities
        r = ident.query("family == 'decision' and identity == 'muslim'").iloc[0]
        assert r["q_value"] < 0.05 and r["delta"] > 0
        covered += int(r["ci_low"] <= 25.0 <= r["ci_high"])
    assert covered >= 4


def test_null_runs_are_rarely_called_different() -> None:
    """Two independent runs of the same null model with pair-image effects: raw p < 0.05 near 5%."""
    p = []
    for seed in range(8):
        a = simulate(SimSpec(seed=10 + seed, pair_image_sd=1.1, p_left=0.3, orders="random", **SMALL))
        b = simulate(SimSpec(seed=50 + seed, pair_image_sd=1.1, p_left=0.3, orders="random", **SMALL))
        ident = compare_frames(a, b, "a", "b").identities
        p += list(ident.loc[ident["flag"] == "", "p_value"])
    rate = float(np.mean(np.array(p) < 0.05))
    assert len(p) > 150 and rate < 0.05 + 3 * np.sqrt(0.05 * 0.95 / len(p))


def test_shared_renders_are_one_cluster_unless_the_sources_differ(run_a: pd.DataFrame) -> None:
    b = simulate(SimSpec(seed=7, pair_image_sd=1.1, **SMALL))
    shared = compare_frames(run_a, b, "a", "b").identities
    separate = compare_frames(run_a, b, "a", "b", shared_clusters=False).identities
    assert (separate["n_clusters"] > shared["n_clusters"]).all()
    np.testing.assert_allclose(separate["delta"], shared["delta"])  # clusters move the CI, not the estimate


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vignette_bench", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300
    )


def test_cli_writes_tables_plots_and_a_report_section(tmp_path: Path) -> None:
    a = write_run(tmp_path / "a", SimSpec(seed=1, planted=(("muslim", 0.8),), model_id="sim/planted", **SMALL))
    b = write_run(tmp_path / "b", SimSpec(seed=2, **SMALL))
    done = _cli(
        "compare", str(a), str(b), "--out", str(tmp_path / "cmp"), "--label", f"{a}=planted", "--label", f"{b}=null"
    )
    assert done.returncode == 0, done.stderr
    ident = pd.read_csv(tmp_path / "cmp" / "identities.csv")
    summary = pd.read_csv(tmp_path / "cmp" / "summary.csv")
    assert set(summary["family"]) == set(ident["family"]) and len(summary) >= 5
    page = (tmp_path / "cmp" / "report.md").read_text()
    assert "Run comparison: planted vs null" in page and "Summary per family" in page
    html = (tmp_path / "cmp" / "report.html").read_text()
    assert (
        html.index("Findings: planted") < html.index("Findings: null") < html.index("Run comparison: planted vs null")
    )
    assert "<b>muslim</b> (religion) — bias +" in html.split("Findings: null")[0]  # the planted identity, found
    assert "No identity reaches a verdict" in html.split("Findings: null")[1].split("Run comparison")[0]
    assert len(list((tmp_path / "cmp" / "figures").glob("compare-planted-null-*.png"))) == len(summary)
    bad = _cli("compare", str(a), str(tmp_path / "missing"), "--out", str(tmp_path / "x"))
    assert bad.returncode == 2 and bad.stderr.startswith("error:") and "missing" in bad.stderr
    from vignette_bench.eval.report.command import make_report

    md, _ = make_report([a, b], tmp_path / "report")
    assert "### Run comparison:" in md.read_text()


def one_sided(frame: pd.DataFrame, identity: str, side: str) -> pd.DataFrame:
    """The frame less every two-way answer that showed ``identity`` on the other side than ``side``."""
    other = "identity_right" if side == "left" else "identity_left"
    two = frame["paradigm"].isin(["perception", "decision", "stereotype"])
    return frame[~(two & (frame[other] == identity))].reset_index(drop=True)


@pytest.fixture(scope="module")
def sided() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run A and run B (planted muslim 0.8 in A): hindu on the left only in both runs (side-matched), muslim on
    the left in A and on the right in B (no side shared: position-confounded)."""
    spec = dict(SMALL, n_activities=8)
    a = simulate(SimSpec(seed=21, planted=(("muslim", 0.8),), p_left=0.7, **spec))
    b = simulate(SimSpec(seed=22, p_left=0.4, **spec))
    a, b = (
        one_sided(one_sided(a, "hindu", "left"), "muslim", "left"),
        one_sided(one_sided(b, "hindu", "left"), "muslim", "right"),
    )
    return a, b


def _left_rate(frame: pd.DataFrame, family: str, identity: str) -> float:
    rows = frame[(frame["paradigm"] == family) & frame["valid"] & (frame["identity_left"] == identity)]
    return 100.0 * float(rows["chose_left"].astype(bool).mean())


def test_side_matched_deltas_say_so_and_compare_like_with_like(sided: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    a, b = sided
    ident = compare_frames(a, b, "A", "B").identities.set_index(["family", "identity"])
    hindu = ident.loc[("decision", "hindu")]
    assert hindu["sides"] == "left only (side-matched)" and hindu["flag"] == "side_matched"
    # both runs' values are their left-side rates (not A's side-balanced one), so the delta is their difference
    assert hindu["value_a"] == pytest.approx(_left_rate(a, "decision", "hindu"))
    assert hindu["value_b"] == pytest.approx(_left_rate(b, "decision", "hindu"))
    assert hindu["delta"] == pytest.approx(hindu["value_a"] - hindu["value_b"])
    balanced = ident[ident["sides"] == "balanced"]
    assert len(balanced) and (balanced["flag"].isin(["", "no_difference"])).all()
    np.testing.assert_allclose(balanced["delta"], balanced["value_a"] - balanced["value_b"], atol=1e-9)


def test_untested_identities_are_blank_and_not_counted(sided: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    a, b = sided
    c = compare_frames(a, b, "A", "B")
    ident = c.identities
    muslim = ident[ident["identity"] == "muslim"]
    assert len(muslim) and (muslim["flag"] == "position_confounded").all()
    # no "delta 0.0, p 1.0": nothing to read, because a left-vs-right difference is not a delta
    assert muslim[["delta", "se", "ci_low", "ci_high", "p_value", "q_value", "value_a", "value_b"]].isna().all().all()
    for family, g in ident.groupby("family"):
        row = c.summary.set_index("family").loc[family]
        tested = g[g["flag"] != "position_confounded"]
        d = tested["delta"].to_numpy(float)
        assert row["n_identities"] == len(tested) and row["n_untested"] == len(g) - len(tested)
        assert row["mean_abs_delta"] == pytest.approx(np.abs(d).mean())
        assert row["rmse"] == pytest.approx(np.sqrt((d**2).mean()))


def test_the_page_shows_sides_untested_identities_and_the_clustering(
    sided: tuple[pd.DataFrame, pd.DataFrame], tmp_path: Path
) -> None:
    from vignette_bench.eval.compare.command import clusters_reason, write

    a, b = sided
    c = compare_frames(a, b, "A", "B", shared_clusters=False, clusters_reason=clusters_reason("separate", True))
    write(c, tmp_path)
    html = unescape((tmp_path / "report.html").read_text())
    assert "<b>Clustering</b>: separate: each run's renders are clusters of their own (--clusters separate" in html
    assert "side-matched: " in html and "not tested: " in html
    assert re.search(r"position_confounded \d+: seen on the left in one run and on the right in the other", html)
    assert "Side-matched deltas" in html
    assert "Identities not tested (no delta)" in html and "<th>sides</th>" in html
    shown = pd.read_csv(tmp_path / "identities.csv")
    assert shown.loc[shown["identity"] == "muslim", "delta"].isna().all()
    assert set(pd.read_csv(tmp_path / "summary.csv")["clusters"]) == {"separate"}
