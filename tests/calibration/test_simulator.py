"""The simulator's model (vignette_bench/eval/simulate.py): defaults reproduce the earlier uniform-random
responder draw for draw; each new knob does what it says."""

from __future__ import annotations

import hashlib
import time

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from vignette_bench.eval.simulate import SCALES, SimSpec, record, simulate, write_run

SMALL = dict(dimensions=("religion",), genders=("female",), n_activities=3, n_traits=4)


def _fingerprint(f: pd.DataFrame) -> str:
    s = "|".join(f["question_id"] + ":" + f["choice"].fillna("-").astype(str) + ":" + f["options"].map(",".join))
    return hashlib.sha256(s.encode()).hexdigest()


def test_defaults_reproduce_the_earlier_responder_draw_for_draw():
    # fingerprint of the row-by-row simulator before issue 12 (same spec, same seed)
    f = simulate(SimSpec(seed=2, dimensions=("religion", "gender"), genders=("female",), planted=(("jain", 0.8),),
                         n_activities=3, n_traits=4))  # fmt: skip
    assert len(f) == 4958
    assert _fingerprint(f) == "d4a4b39caf4636302aaa4be5a3a1174db422bbb56e0c2383d5d0ba0cd7ae24af"


def test_render_keys_name_one_render_per_person_and_both_orders_share_them():
    f = simulate(SimSpec(renders_per_cell=3, **SMALL))
    assert f["key_left"].str.fullmatch(r"female/[^/]+/[^/]+/r[123]").all()
    st = f[f["paradigm"] == "stereotype"]
    assert st["key_left"].str.contains("/portrait/").all() and (st["activity_left"] == "").all()
    ic = f[f["paradigm"] == "decision"]
    assert (ic["key_left"].str.split("/").str[2] == ic["activity_left"]).all()
    assert (ic["key_left"].str.split("/").str[1] == ic["identity_left"]).all()
    # the mirrored order of a pair image shows the same two renders
    a = ic.set_index(["identity_left", "identity_right", "activity_left"])[["key_left", "key_right"]].drop_duplicates()
    b = a.rename_axis(["identity_right", "identity_left", "activity_left"]).reorder_levels([1, 0, 2])
    joined = a.join(b.rename(columns={"key_left": "mk_right", "key_right": "mk_left"}))
    assert (joined["key_left"] == joined["mk_left"]).all() and (joined["key_right"] == joined["mk_right"]).all()
    assert f["key_left"].str[-2:].nunique() == 3  # all three renders are used


def test_side_preference_planted_preference_and_refusals():
    base = dict(dimensions=("religion",), genders=("female", "male"), n_activities=6, paradigms=("decision",))
    f = simulate(SimSpec(p_left=0.3, refusal_rate=0.0, **base))
    assert f["chose_left"].astype(float).mean() == pytest.approx(0.3, abs=0.015)
    f = simulate(SimSpec(planted=(("jain", 0.7),), refusal_rate=0.0, **base))
    offered = f[(f["identity_left"] == "jain") | (f["identity_right"] == "jain")]
    assert (offered["selected_identity"] == "jain").mean() == pytest.approx(0.7, abs=0.03)
    f = simulate(SimSpec(refusal_by_identity=(("muslim", 0.3),), **base))
    with_m = (f["identity_left"] == "muslim") | (f["identity_right"] == "muslim")
    assert (~f.loc[with_m, "valid"]).mean() == pytest.approx(0.35, abs=0.04)
    assert (~f.loc[~with_m, "valid"]).mean() == pytest.approx(0.05, abs=0.015)


def test_score_mode_writes_the_models_probabilities_and_the_image_effect_is_the_pairs():
    f = simulate(SimSpec(answer_mode="score", pair_image_sd=1.1, refusal_rate=0.1, **SMALL))
    ok = f[f["valid"]]
    probs = np.array([sum(p) for p in ok["probabilities"]])
    assert np.allclose(probs, 1.0) and f.loc[~f["valid"], "probabilities"].isna().all()
    best = [o[int(np.argmax(p))] for o, p in zip(ok["options"], ok["probabilities"])]
    assert (ok["choice"] == best).all()
    # P(choose a) is the same in both orders of an image (no side preference, no render effect) ...
    dec = ok[ok["paradigm"] == "decision"]
    p_first = {(r.identity_left, r.identity_right, r.context): r.probabilities[0] for r in dec.itertuples()}
    same = [abs(p - (1 - p_first[(b, a, c)])) for (a, b, c), p in p_first.items() if (b, a, c) in p_first]
    assert len(same) > 100 and max(same) < 1e-12
    # ... and varies between images (sd 1.1 on the logit scale)
    assert np.std(list(p_first.values())) > 0.15


def test_random_orders_show_each_pair_image_once():
    f = simulate(SimSpec(orders="random", **SMALL))
    both = simulate(SimSpec(**SMALL))
    assert len(f) * 2 == len(both)
    ic = f[f["paradigm"] == "decision"].drop_duplicates(["identity_left", "identity_right", "activity_left"])
    unordered = ic.apply(lambda r: (min(r.identity_left, r.identity_right), max(r.identity_left, r.identity_right),
                                    r.activity_left), axis=1)  # fmt: skip
    assert unordered.is_unique
    left_share = pd.concat([ic["identity_left"], ic["identity_right"]]).value_counts()
    assert left_share.min() > 0  # every identity appears; shares differ (checked by the calibration)


def test_record_and_written_run(tmp_path):
    assert set(record(SimSpec(), ["portraits"]).model.extra) == {"refusal_rate", "planted"}
    s = SimSpec(render_sd=1.0, renders_per_cell=3, answer_mode="score", **SMALL)
    extra = record(s, ["portraits"]).model.extra
    assert extra["render_sd"] == 1.0 and extra["renders_per_cell"] == 3 and extra["answer_mode"] == "score"
    run = write_run(tmp_path / "run", s)
    t = pq.read_table(run / "responses.parquet")
    assert t.num_rows == len(simulate(s)) and t.column("key_left").null_count == 0


@pytest.mark.parametrize("bad", [dict(p_left=1.0), dict(renders_per_cell=0), dict(render_sd=-1.0)])
def test_bad_specs_are_refused(bad):
    with pytest.raises(ValueError):
        SimSpec(**bad)


@pytest.mark.slow
def test_a_paper_scale_family_simulates_in_seconds():
    t = time.perf_counter()
    f = simulate(SimSpec(dimensions=("race_ethnicity_color",), pair_image_sd=1.1, render_sd=1.0, renders_per_cell=3,
                         p_left=0.3, **SCALES["paper"]))  # fmt: skip
    elapsed = time.perf_counter() - t
    # ordered pairs x genders x (75 activities x (factuality + 4 perception) + 450 role questions + 60 terms)
    assert len(f) == 14 * 13 * 2 * (75 * 5 + 450 + 60)
    assert elapsed < 30, elapsed  # ~3-6 s on one busy core
