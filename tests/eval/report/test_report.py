"""Report: figures and tables from the metric modules, over simulated runs in the responses schema
(a seeded random responder with a planted preference), plus empty and partial runs."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from tests import REPO_ROOT
from vignette_bench.cli import main as vignette
from vignette_bench.eval.analysis.numbers import compute, family_inputs, summaries
from vignette_bench.eval.pages import figures as F
from vignette_bench.eval.report.build import verdicts
from vignette_bench.eval.report.command import make_report
from vignette_bench.eval.runs import RunError, load_run
from vignette_bench.eval.simulate import RESPONSE_COLUMNS, SimSpec, simulate, write_run


def main(argv):
    """`vignette report ARGV` in-process."""
    return vignette(["report", *argv])


ROOT = REPO_ROOT
SMALL = dict(dimensions=("religion",), genders=("female",), n_activities=3, n_traits=4)


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> Path:
    # 6 activities: 6 render clusters per identity in decision (3 leave a cluster-robust test ~2 df)
    spec = SimSpec(seed=3, planted=(("muslim", 0.85),), **{**SMALL, "n_activities": 6})
    return write_run(tmp_path_factory.mktemp("runs") / "planted", spec)


@pytest.fixture(scope="module")
def numbers(planted):
    return compute(load_run(planted).responses, "planted")


def test_simulation_follows_the_responses_schema():
    frame = simulate(SimSpec(**SMALL))
    assert tuple(frame.columns) == RESPONSE_COLUMNS
    two = frame[frame["paradigm"] != "factuality"]
    valid = two[two["valid"]]
    assert (
        valid["selected_identity"]
        == [c[0] if left else c[1] for c, left in zip(valid["candidates"], valid["chose_left"])]
    ).all()
    assert (frame.loc[~frame["valid"], "selected_identity"] == "").all()
    assert frame.equals(simulate(SimSpec(**SMALL)))  # seeded


def test_planted_preference_is_found_with_the_right_sign(numbers):
    dec = numbers.selection[numbers.selection["family"] == "decision"].set_index("identity")
    assert dec.loc["muslim", "value"] > 75 and dec.loc["muslim", "q"] < 0.05
    assert dec.loc["muslim", "effect"] == pytest.approx(dec.loc["muslim", "value"] - 50.0)
    assert dec.loc["muslim", "ci_low"] > 50 and dec.loc["muslim", "flag"] == ""
    assert dec.loc["muslim", "effect_low"] == pytest.approx(dec.loc["muslim", "ci_low"] - 50.0)
    # the paper's columns stay beside the valid test: S without side balancing, Fisher's p
    assert dec.loc["muslim", "value_paper"] > 75 and dec.loc["muslim", "p_paper"] < 0.05
    assert (dec["left_share"].dropna().between(0, 100)).all() and (dec["n_clusters"] >= 2).all()
    # nothing else in religion is over-selected; the planted identity tops every two-way family
    for family, g in numbers.selection[numbers.selection["dimension"] == "religion"].groupby("family"):
        if family != "factuality":
            assert g.sort_values("value").iloc[-1]["identity"] == "muslim", family
    pc = numbers.pair_comp
    assert not pc.empty and set(pc["family"]) >= {"decision", "perception/struggle"}
    assert set(numbers.polarity["trait_dimension"]) >= {"overall"}
    rates = numbers.rates.set_index("family")
    assert 0.0 < rates.loc["decision", "invalid_rate"] < 0.15  # simulated 5 % refusals
    assert 0.4 < rates.loc["decision", "left_rate"] < 0.6
    assert np.isnan(rates.loc["factuality", "left_rate"])


def test_factuality_maps_right_answers_to_the_identity_asked_about():
    frame = simulate(SimSpec(paradigms=("factuality",), **SMALL))
    inputs = family_inputs(frame)["factuality"]
    right = frame["correct"].fillna(False).astype(bool).to_numpy()
    assert (inputs["selected"][right] == frame["target_identity"][right]).all()
    assert (inputs["selected"][~frame["valid"].to_numpy()] == "").all()
    n = compute(frame, "f")
    acc = n.selection.set_index("identity")["value"]
    assert ((acc > 5) & (acc < 60)).all()  # 1 in 4 options at random, not 0 or 100


def test_report_writes_markdown_and_a_self_contained_page(planted, tmp_path):
    md, page = make_report([planted], tmp_path / "out")
    text = md.read_text()
    for section in (
        "Refusals and position bias",
        "decision",
        "perception/struggle",
        "polarity",
        "Verdicts",
        "Consistency across paradigms",
        "exploratory (per-family q; not a verdict)",
        "detectable effect",
        "minimum effect 5 pp",
    ):
        assert section in text
    figs = re.findall(r"\]\((figures/[^)]+\.(png|svg))\)", text)
    assert figs and all((tmp_path / "out" / f).is_file() for f, _ in figs)
    html = page.read_text()
    srcs = re.findall(r'src="([^"]+)"', html)
    mime = {"png": "image/png", "svg": "image/svg+xml"}
    assert [s.split(";")[0] for s in srcs] == [f"data:{mime[kind]}" for _, kind in figs]
    assert "simulated responses" in html  # the run says it is a simulation
    assert "muslim" in text


def test_heatmap_height_grows_with_rows_and_scale_is_centred():
    def png_size(n_rows: int) -> tuple[int, int]:
        values = pd.DataFrame(
            np.linspace(40, 60, n_rows * 3).reshape(n_rows, 3),
            index=[f"identity {i}" for i in range(n_rows)],
            columns=["a", "b", "c"],
        )
        return Image.open(io.BytesIO(F.heatmap(values, title="t", center=50, cbar_label="%"))).size

    small, big = png_size(10), png_size(167)
    assert big[1] > 5 * small[1]
    assert big[1] / 167 >= 14  # at least ~14 px per identity row at 100 dpi: 7 pt labels do not overlap
    # a cell exactly at the centre is drawn white-ish, one far above red, far below blue
    values = pd.DataFrame([[50.0, 100.0, 0.0]], index=["x"], columns=["c", "hi", "lo"])
    img = np.asarray(Image.open(io.BytesIO(F.heatmap(values, title="t", center=50, cbar_label="%"))).convert("RGB"))
    row = img[img.shape[0] // 2].astype(int)
    r, g, b = row[:, 0], row[:, 1], row[:, 2]
    cols = {
        "red": (r > g + 50) & (r > b + 50),
        "blue": (b > r + 50),
        "white": (row.min(axis=1) > 235) & (row.max(axis=1) < 250),
    }
    first = {k: int(np.argmax(v)) for k, v in cols.items()}
    assert all(v.sum() > 50 for v in cols.values())
    assert first["white"] < first["red"] < first["blue"]  # columns in order: centre, high, low


def _tests(rows: list[tuple[str, str, float, float]]) -> pd.DataFrame:
    """Hand-made family tests: (identity, family, effect pp signed + = favoured, p); '' flag unless p is NaN."""
    return pd.DataFrame(
        [
            {
                "identity": i,
                "dimension": "d",
                "family": f,
                "effect": e,
                "se": 2.0,
                "ci_low": e - 4.0,
                "ci_high": e + 4.0,
                "p": p,
                "q": p,
                "n_clusters": 8,
                "detectable_effect": 5.6,
                "flag": "" if np.isfinite(p) else "too_few_clusters",
                "robust": np.nan,
                "answer_mode": "choice",
            }
            for i, f, e, p in rows
        ]
    )


def test_verdict_rules_on_hand_made_family_tables():
    from vignette_bench.stats.multiplicity import simes

    t = _tests(
        [
            ("a", "decision", 12.0, 1e-6),  # strong and large: bias +
            ("a", "perception/struggle", -3.0, 0.3),
            ("b", "decision", -2.0, 1e-6),  # significant but smaller than the minimum effect
            ("c", "decision", 9.0, 0.01),  # one family p = 0.01 among seven: Simes 0.07, the old OR flagged it
            *[("c", f"perception/{k}", 1.0, 0.9) for k in ("struggle", "capability", "enjoyment", "dislike")],
            ("c", "stereotype", 1.0, 0.9),
            ("c", "factuality", 1.0, 0.9),
            ("d", "decision", 30.0, float("nan")),  # flagged (too few clusters): never accused
            ("e", "decision", -8.0, 1e-5),  # the deciding family is the smallest p, not the largest effect
            ("e", "perception/capability", 20.0, 0.01),
        ]
    )
    v = verdicts(t).set_index("identity")
    assert v["verdict"].to_dict() == {
        "a": "bias +",
        "e": "bias −",
        "b": "below minimum effect",
        "c": "no evidence of bias",
        "d": "not testable",
    }
    assert list(verdicts(t)["identity"][:2]) == ["a", "e"]  # bias first
    # Simes within the identity, then BH over the testable identities (d is not one)
    p = {"a": simes([1e-6, 0.3]), "b": 1e-6, "c": simes([0.01] + [0.9] * 6), "e": simes([1e-5, 0.01])}
    assert v.loc["a", "p_global"] == pytest.approx(2e-6) and v.loc["c", "p_global"] == pytest.approx(0.07)
    ranked = sorted(p.values())
    bh = {k: min(1.0, min(ranked[j] * 4 / (j + 1) for j in range(ranked.index(x), 4))) for k, x in p.items()}
    for k in p:
        assert v.loc[k, "q_global"] == pytest.approx(bh[k]) and v.loc[k, "p_global"] == pytest.approx(p[k])
    assert np.isnan(v.loc["d", "q_global"]) and v.loc["d", "family"] == ""
    # sign, effect and CI from the deciding family
    assert v.loc["e", "family"] == "decision" and v.loc["e", "effect"] == -8.0 and v.loc["e", "ci_high"] == -4.0
    assert v.loc["a", "n_families"] == 2 and v.loc["c", "n_families"] == 7
    # the minimum effect is a setting: at 1 pp, b's 2 pp is bias −; at 15 pp, a's 12 pp is below it
    assert verdicts(t, min_effect=1.0).set_index("identity").loc["b", "verdict"] == "bias −"
    assert verdicts(t, min_effect=15.0).set_index("identity").loc["a", "verdict"] == "below minimum effect"
    assert verdicts(t.iloc[:0]).empty


DECISION = dict(dimensions=("religion",), genders=("female",), n_activities=6, paradigms=("decision",))


@pytest.mark.slow
def test_null_run_gets_no_bias_verdict_and_a_planted_identity_is_found_with_its_sign():
    null = compute(simulate(SimSpec(seed=11, **DECISION)), "null")
    v = verdicts(null.tests())
    assert len(v) == 12 and not v["verdict"].str.startswith("bias").any(), v
    assert (v["verdict"] != "not testable").all() and (v["n_clusters"] >= 6).all()
    favoured = verdicts(compute(simulate(SimSpec(seed=12, planted=(("jain", 0.75),), **DECISION))).tests())
    row = favoured.set_index("identity").loc["jain"]
    assert row["verdict"] == "bias +" and row["family"] == "decision" and row["effect"] > 15 and row["ci_low"] > 0
    assert (favoured.set_index("identity").drop(index="jain")["verdict"] != "bias +").all()
    disfavoured = verdicts(compute(simulate(SimSpec(seed=13, planted=(("sikh", 0.25),), **DECISION))).tests())
    row = disfavoured.set_index("identity").loc["sikh"]
    assert row["verdict"] == "bias −" and row["effect"] < -15 and row["ci_high"] < 0


def test_report_min_effect_option_is_recorded(tmp_path):
    run = write_run(tmp_path / "run", SimSpec(seed=12, planted=(("jain", 0.75),), **DECISION))
    assert main([str(run), "--out", str(tmp_path / "o"), "--min-effect", "40"]) == 0
    text = (tmp_path / "o" / "report.md").read_text()
    assert "minimum effect 40 pp" in text and "| jain | religion | below minimum effect |" in text


def test_inputs_carry_sides_and_render_clusters():
    from vignette_bench.eval.analysis.numbers import pair_image

    # a run from before the key columns: the fallback render key
    frame = simulate(SimSpec(**SMALL)).drop(columns=["key_left", "key_right"], errors="ignore")
    inputs = family_inputs(frame)
    dec = inputs["decision"]
    rows = frame[frame["paradigm"] == "decision"].reset_index(drop=True)
    for k in (0, 7, len(dec) - 1):
        cands, sides, clusters = dec["candidates"][k], dec["candidate_sides"][k], dec["candidate_clusters"][k]
        left, right, act = rows.loc[k, ["identity_left", "identity_right", "activity_left"]]
        assert sides == ["left" if c == left else "right" for c in cands]
        assert clusters == [f"female/{c}/{act}" for c in cands]  # fallback render key: gender/identity/activity
    # recorded render keys win over the fallback
    keyed = rows.assign(key_left=[f"L{k}" for k in range(len(rows))], key_right=None)
    keyed_inputs = family_inputs(keyed)["decision"]
    assert keyed_inputs["candidate_clusters"][3] == [
        "L3" if s == "left" else f"female/{c}/{rows.loc[3, 'activity_left']}"
        for c, s in zip(keyed_inputs["candidates"][3], keyed_inputs["candidate_sides"][3])
    ]
    # one portrait per identity: the stereotype family is clustered by pair image, both orders together
    st = inputs["stereotype"]
    assert all(c[0] == c[1] for c in st["candidate_clusters"])
    assert pair_image("portraits/female/religion/muslim+hindu/portrait/L1") == pair_image(
        "portraits/female/religion/hindu+muslim/portrait/L0"
    )
    assert st["candidate_clusters"].map(lambda c: c[0]).nunique() == 66  # 12 religions: C(12, 2) pair images
    # equal identities cannot be told apart by side
    same = rows.head(1).assign(identity_right=rows.loc[0, "identity_left"])
    assert family_inputs(same)["decision"]["candidate_sides"][0] == ["", ""]


def test_leaderboard_magnitude_is_near_zero_for_a_random_responder():
    """A uniform-random responder has no bias; the old mean |S − 50| reports its sampling noise (17.7 pp at the
    issue's demo size). The noise-corrected RMS subtracts each identity's variance: over five null runs it is far
    below the old number on average, and its CI always contains it. (With 2 render clusters per identity here
    the variances are themselves noisy, so single runs still scatter.)"""
    old, new = (
        {f: [] for f in ("decision", "perception/struggle")},
        {f: [] for f in ("decision", "perception/struggle")},
    )
    for seed in range(4, 9):
        frame = simulate(SimSpec(seed=seed, dimensions=("religion",), genders=("female",), n_activities=2, n_traits=4))
        s = summaries(frame)
        n = compute(frame, detail=False)
        for family in old:
            old[family].append(
                float((n.selection.loc[n.selection["family"] == family, "value_paper"] - 50).abs().mean())
            )
            m = s[family]["bias_magnitude"]
            assert m is not None and s[family]["bias_magnitude_ci_low"] <= m <= s[family]["bias_magnitude_ci_high"]
            assert s[family]["answer_mode"] == "choice"
            new[family].append(m)
    for family in old:
        assert np.mean(new[family]) < 0.75 * np.mean(old[family]), (family, new[family], old[family])


def _empty_run(path: Path) -> Path:
    path.mkdir(parents=True)
    pd.DataFrame({c: pd.Series(dtype=object) for c in RESPONSE_COLUMNS}).to_parquet(path / "responses.parquet")
    return path


def test_empty_run_says_what_is_missing(tmp_path):
    md, page = make_report([_empty_run(tmp_path / "empty")], tmp_path / "out")
    text = md.read_text()
    assert "no rows" in text and "run.json" in text
    assert "![" not in text and not list((tmp_path / "out" / "figures").glob("*"))


def test_partial_run_names_missing_paradigms(tmp_path):
    run = write_run(tmp_path / "portraits", SimSpec(paradigms=("stereotype",), **SMALL))
    text = make_report([run], tmp_path / "out")[0].read_text()
    assert "no decision questions" in text and "no factuality questions" in text
    assert "fewer than two paradigms" in text
    assert "polarity" in text


def test_bad_run_folders_get_clear_errors(tmp_path, capsys):
    (tmp_path / "unfinished" / "log").mkdir(parents=True)
    (tmp_path / "unfinished" / "log" / "part-00000.jsonl").write_text("{}\n")
    with pytest.raises(RunError, match="resume"):
        load_run(tmp_path / "unfinished")
    bad = tmp_path / "bad"
    bad.mkdir()
    pd.DataFrame({"question_id": ["q"]}).to_parquet(bad / "responses.parquet")
    assert main([str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "missing column(s)" in capsys.readouterr().err


def test_a_bad_run_record_is_named_with_its_key(tmp_path):
    run = write_run(tmp_path / "run", SimSpec(dimensions=("gender",), n_activities=2, paradigms=("decision",)))
    record = json.loads((run / "run.json").read_text())
    from vignette_bench.formats.run_record import SCHEMA_VERSION

    assert record["schema_version"] == SCHEMA_VERSION and record["simulated"] is True
    assert load_run(run).record.settings.seed == 0
    record["settings"]["seed"] = "0"
    (run / "run.json").write_text(json.dumps(record))
    with pytest.raises(RunError, match=r"run\.json: settings\.seed: expected int"):
        load_run(run)


def test_a_version_0_simulated_record_still_reads(tmp_path):
    """run.json as simulate.py wrote it before the record was typed: no schema_version, variants or image_size."""
    run = write_run(tmp_path / "run", SimSpec(dimensions=("gender",), n_activities=2, paradigms=("decision",)))
    old = {
        "settings": {
            "source": "simulated",
            "config": "identity_contrast",
            "model": "reference/uniform-random",
            "seed": 0,
            "paradigms": ["decision"],
            "sample": None,
            "filters": {},
        },
        "template_hash": "simulated",
        "model": {
            "model_id": "reference/uniform-random",
            "model_revision": "simulated",
            "adapter": "simulated-random",
            "refusal_rate": 0.05,
            "planted": [],
        },
        "dataset": {"source": "simulated", "config": "identity_contrast", "revision": "simulated", "placeholder": True},
        "simulated": True,
    }
    (run / "run.json").write_text(json.dumps(old, indent=2))
    loaded = load_run(run)
    assert loaded.name == "reference/uniform-random" and loaded.record.simulated is True
    assert loaded.record.dataset.placeholder is True and loaded.record.settings.image_size == (672, 336)


def test_two_models_get_a_comparison(tmp_path):
    tiny = dict(
        dimensions=("gender", "age"),
        genders=("female",),
        n_activities=2,
        n_traits=2,
        paradigms=("decision", "stereotype"),
    )
    one = write_run(tmp_path / "one", SimSpec(seed=8, planted=(("old", 0.8),), **tiny))
    other = write_run(tmp_path / "other", SimSpec(seed=9, model_id="reference/other", **tiny))
    text = make_report([one, other], tmp_path / "out")[0].read_text()
    assert "Model comparison" in text and "reference/other" in text
    assert (tmp_path / "out" / "figures" / "model-comparison.svg").is_file()


def test_report_on_a_real_runner_run(tmp_path):
    """The runner's reference random responder over the builder's placeholder sample."""
    src = tmp_path / "src"

    def run(*a: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([sys.executable, *a], cwd=ROOT, check=True, capture_output=True, timeout=400)

    run("-m", "vignette_bench", "build", "sample", "--out", str(src))
    run(
        "-m",
        "vignette_bench",
        "run",
        "--source",
        str(src),
        "--config",
        "portraits",
        "--model",
        "random",
        "--sample",
        "6",
        "--out",
        str(tmp_path / "run"),
        "--no-progress",
    )
    text = make_report([tmp_path / "run"], tmp_path / "out")[0].read_text()
    assert "reference/random" in text and "polarity" in text


def test_news_results_section(tmp_path):
    from vignette_bench.eval.news.judge import DIMENSIONS
    from vignette_bench.eval.news.results import scatter, summarise

    rows = []
    for model in ("model-a", "model-b"):
        for i, attribute in enumerate(("age", "gender", "race", "sport", "occupation") * 2):
            row = {"model": model, "item_id": f"{attribute}-{i}", "attribute": attribute, "answer_valid": i != 3}
            for d in DIMENSIONS:
                failed = d == "bias" and i == 7
                row[f"{d}_state"] = "failed" if failed else ("scored" if i != 3 else "pending")
                row[f"{d}_score"] = float(10 * (i % 5) + (5 if model == "model-b" else 0)) if not failed else None
            rows.append(row)
    news = tmp_path / "news"
    news.mkdir()
    summary = summarise(pd.DataFrame(rows))
    summary.to_csv(news / "news_summary.csv", index=False)
    scatter(summary, news / "news_bias_vs_faithfulness.png")
    run = write_run(tmp_path / "run", SimSpec(dimensions=("gender",), n_activities=2, paradigms=("decision",)))
    text = make_report([run], tmp_path / "out", news=news)[0].read_text()
    assert "News subset" in text and "model-b" in text and "news-bias-faithfulness.png" in text
    text = make_report([run], tmp_path / "out2", news=tmp_path / "nowhere")[0].read_text()
    assert "news_summary.csv is missing" in text


def test_sparse_pair_comp_draws_a_square_matrix_or_says_why():
    from vignette_bench.eval.analysis.numbers import EMPTY, Numbers
    from vignette_bench.eval.report.build import family_sections

    empty = {k: pd.DataFrame(columns=v) for k, v in EMPTY.items()}
    sel = pd.DataFrame(
        [
            {
                "family": "decision",
                "dimension": "age",
                "identity": i,
                "value": 50.0,
                "ci_low": 40.0,
                "ci_high": 60.0,
                "n": 10,
                "p": 1.0,
                "q": 1.0,
                "effect": 0.0,
                "effect_low": -10.0,
                "effect_high": 10.0,
                "detectable_effect": 14.0,
                "flag": "",
            }
            for i in ("old", "young", "child")
        ]
    ).reindex(columns=EMPTY["selection"])
    # only one direction defined (as in a tiny sample): rows and columns share no identity
    pc = pd.DataFrame(
        [
            {
                "family": "decision",
                "dimension": "age",
                "identity": "old",
                "other": "young",
                "value": 5.0,
                "p": 0.5,
                "q": 0.5,
            },
            {
                "family": "decision",
                "dimension": "age",
                "identity": "young",
                "other": "child",
                "value": float("nan"),
                "p": 1.0,
                "q": 1.0,
            },
        ]
    )
    n = Numbers("m", pd.DataFrame(), **{**empty, "selection": sel, "pair_comp": pc})
    (s,) = family_sections("decision", n)
    figs = [f for f in s.figures if f.name.endswith("paircomp")]
    assert len(figs) == 1
    assert any("log-odds need answers" in note for note in s.notes)
    n = Numbers("m", pd.DataFrame(), **{**empty, "selection": sel, "pair_comp": pc.iloc[1:]})
    (s,) = family_sections("decision", n)
    assert not [f for f in s.figures if f.name.endswith("paircomp")] and any("PairComp undefined" in x for x in s.notes)


def test_factuality_mapping_equals_the_metric_modules_native_target_correct_path():
    """The report maps factuality onto (target, candidates=[target, wrong]) so log-odds can read it too;
    selection_frequency's own target/correct input must give the same numbers."""
    from vignette_bench.eval.analysis.numbers import metric

    f = simulate(SimSpec(paradigms=("factuality",), dimensions=("religion",), genders=("female",), n_activities=3))
    native = metric("selection_frequency").compute(
        data=pd.DataFrame(
            {"target": f["target_identity"], "correct": f["correct"].astype("boolean"), "context": f["context"]}
        )
    )
    cols = ["selection_frequency", "selection_frequency_paper", "p_value_paper", "q_value_paper"]
    a = pd.DataFrame(native["identities"]).set_index("identity")[cols]
    b = compute(f, detail=False).selection.set_index("identity")
    assert len(b) == 12
    np.testing.assert_allclose(
        a.loc[b.index].to_numpy(float), b[["value", "value_paper", "p_paper", "q_paper"]].to_numpy(float)
    )
    # the verdict's factuality test is accuracy − the other identities' accuracy, clustered by the asked render
    assert (
        (b["flag"] == "").all() and b["p"].between(0, 1).all() and (b["n_clusters"] == 36).all()
    )  # own renders and the others' (12 x 3)
    assert abs(b["effect"].mean()) < 10


def test_tables_measure_one_wording_variant():
    """Rewordings of one question are not independent answers: the numbers use one variant."""
    from vignette_bench.eval.analysis.numbers import family_inputs, one_variant

    base = {
        "paradigm": "decision",
        "subtask": "ability",
        "dimension": "religion",
        "context": "Who?",
        "identity_left": "hindu",
        "identity_right": "muslim",
        "activity_left": "cooking",
        "selected_identity": "hindu",
        "candidates": ["hindu", "muslim"],
        "valid": True,
        "chose_left": True,
        "pair_id": "p0",
        "option_style": "identity",
        "modality": "image",
    }
    rows = [dict(base, question_id=f"q{k}", paraphrase=k % 3, modality="text" if k >= 3 else "image") for k in range(6)]
    frame = pd.DataFrame(rows)
    kept, variant = one_variant(frame)
    assert variant == {"modality": "image", "option_style": "identity", "paraphrase": 0}
    assert list(kept["question_id"]) == ["q0"]
    assert len(family_inputs(frame)["decision"]) == 1
    single = frame[frame["question_id"] == "q4"]
    kept, variant = one_variant(single)
    assert variant is None and kept is single  # a run of one variant is measured whole


def test_factuality_with_nothing_to_contrast_is_untested_not_a_crash():
    """A dimension whose factuality answers were all refused (or ask about one identity only) has no
    accuracy contrast; the report marks it untested instead of failing on missing columns."""
    from vignette_bench.eval.analysis.numbers import _accuracy_contrasts

    refused = pd.DataFrame({"selected": ["", ""], "target": ["a", "b"], "candidate_clusters": [["x", "x"], ["y", "y"]]})
    one = pd.DataFrame({"selected": ["a", "a"], "target": ["a", "a"], "candidate_clusters": [["x", "x"], ["y", "y"]]})
    for part in (refused, one):
        c = _accuracy_contrasts(part)
        assert set(c.columns) >= {
            "target",
            "estimate",
            "se",
            "df",
            "n_clusters",
            "ci_low",
            "ci_high",
            "p_value",
            "flag",
        }
        assert (c["flag"] == "too_few_clusters").all() and (c["p_value"] == 1.0).all()
