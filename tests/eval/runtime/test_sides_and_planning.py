"""Sides and planning in the runner: render keys and balanced orders in the answers, `--sample auto`."""

from __future__ import annotations

import json
import math
from collections import Counter

import pytest
from scipy import stats

from vignette import PairSpace
from vignette_bench.cli import main as vignette
from vignette_bench.dataset_builder.sample import build_sample
from vignette_bench.eval.runtime.folder import RunFolder
from vignette_bench.eval.runtime.planning import plan_for_space, plan_sample
from vignette_bench.eval.runtime.questions import Variants
from vignette_bench.eval.runtime.run import RunSettings, plan_sample_size, run
from vignette_bench.stats.planning import DEFAULT_ICC
from vignette_bench.taxonomy import load_taxonomy


def run_main(argv):
    """`vignette run ARGV` in-process."""
    return vignette(["run", *argv])


TAX = load_taxonomy()
IDENTITIES = ("man", "woman", "muslim", "hindu", "christian", "buddhist", "old", "young")
ACTIVITIES = ("cooking", "driving", "teaching", "painting")


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    return str(build_sample(tmp_path_factory.mktemp("src"), size=32, identities=IDENTITIES, activities=ACTIVITIES))


def _settings(source: str, **kw) -> RunSettings:
    base = dict(source=source, config="identity_contrast", model="random", seed=1, paradigms=("decision",))
    return RunSettings(**{**base, "image_size": (64, 32), **kw})


def test_answers_carry_the_plans_render_keys_and_balanced_sides(source, tmp_path):
    result = run(_settings(source, sample=20), tmp_path, progress=False)
    f = RunFolder(tmp_path)
    plan = {r["pair_id"]: r for r in f.plan.read().to_pylist()}
    rows = f.responses.read().to_pylist()
    assert result.asked == len(rows) == 20 * 6 and len(plan) == 20
    for r in rows:
        p = plan[r["pair_id"]]
        assert (r["key_left"], r["key_right"]) == (p["key_left"], p["key_right"])
        assert r["key_left"].endswith("-" + r["activity_left"]) and r["identity_left"] in r["key_left"]
    left = Counter(p["identity_left"] for p in plan.values())
    offered = left + Counter(p["identity_right"] for p in plan.values())
    assert all(abs(left[i] - offered[i] / 2) <= 1 for i in offered)  # the default: balanced sides
    assert f.record.read().settings.orders == "balanced"
    assert f.plan.read().schema.metadata[b"vignette.orders"] == b"balanced"


def test_both_orders_ask_each_sampled_pair_twice_mirrored(source, tmp_path):
    run(_settings(source, sample=5, orders="both"), tmp_path, progress=False)
    plan = RunFolder(tmp_path).plan.read().to_pylist()
    assert len(plan) == 10 and json.loads((tmp_path / "run.json").read_text())["settings"]["orders"] == "both"
    for a, b in zip(plan[::2], plan[1::2]):
        assert a["index"] == b["index"] and (a["key_left"], a["key_right"]) == (b["key_right"], b["key_left"])


def test_plan_arithmetic_on_a_small_config():
    """Female religion identity contrast, decision only: 6 questions per pair image, 12 members."""
    space = PairSpace(TAX, "identity_contrast", dimensions="religion", gender="female")
    plan = plan_for_space(space, TAX, 0, ("decision",), Variants(), effect_pp=10)
    m, members = 6, len(TAX.identities_in("religion", "female"))
    assert plan.answers_per_cluster == m and plan.members == members and plan.members_per_pair == 2
    assert plan.icc == DEFAULT_ICC and plan.family_answers_per_cluster == {"decision": m}
    # G: the smallest cluster count whose t(G-1) test detects 10 pp with power 0.8 at alpha 0.05
    unit_var = 0.25 * (1 + (m - 1) * DEFAULT_ICC) / m
    mde = lambda g: (stats.t(g - 1).isf(0.025) + stats.t(g - 1).ppf(0.8)) * math.sqrt(unit_var / g)  # noqa: E731
    g = plan.clusters_per_identity
    assert mde(g) <= 0.10 < mde(g - 1)
    textbook = (stats.norm.isf(0.025) + stats.norm.ppf(0.8)) ** 2 * unit_var / 0.01
    assert textbook <= g <= textbook + 3  # the t correction adds a cluster or two
    assert plan.pairs == math.ceil(g * members / 2) and not plan.capped
    assert plan.family_detectable_effect_pp["decision"] == pytest.approx(100 * mde(plan.pairs * 2 / members), abs=0.01)
    # a smaller effect needs more; a larger icc needs more; a capped plan says so
    assert plan_for_space(space, TAX, 0, ("decision",), Variants(), effect_pp=5).pairs > 3 * plan.pairs
    assert plan_for_space(space, TAX, 0, ("decision",), Variants(), icc=0.5).pairs > plan.pairs
    tiny = plan_sample(_questions(space, ("decision",)), members=members, members_per_pair=2, pairs_available=10)
    assert tiny.pairs == 10 and tiny.capped and "capped" in tiny.describe()
    with pytest.raises(ValueError, match="between 0 and 50"):
        plan_for_space(space, TAX, 0, ("decision",), Variants(), effect_pp=60)


def _questions(space: PairSpace, paradigms: tuple[str, ...]):
    from dataclasses import asdict

    from vignette_bench.eval.runtime.questions import QuestionBuilder

    return QuestionBuilder(TAX, 0, paradigms, Variants())(asdict(space[0]))


def test_weaker_families_are_reported():
    space = PairSpace(TAX, "identity_contrast", dimensions="religion")
    plan = plan_for_space(space, TAX, 0, ("perception", "decision"), Variants())
    assert plan.answers_per_cluster == 10 and plan.family_answers_per_cluster["perception/struggle"] == 1
    assert plan.family_detectable_effect_pp["perception/struggle"] > plan.family_detectable_effect_pp["decision"] > 10
    assert "perception/struggle" in plan.describe()


def test_cli_sample_auto_records_the_plan(source, tmp_path, capsys):
    args = ["--source", source, "--config", "identity_contrast", "--model", "random", "--paradigms", "decision"]
    args += ["--filter", "dimensions=religion", "--size", "64x32", "--no-progress"]
    args += ["--sample", "auto", "--detectable-effect", "45", "--icc", "0", "--out", str(tmp_path)]
    assert run_main(args) == 0
    err = capsys.readouterr().err
    assert "--sample auto:" in err and "icc 0.000" in err
    record = RunFolder(tmp_path).record.read()
    expected = plan_sample_size(_settings(source, filters=(("dimensions", "religion"),)), 45, 0.0)
    assert record.planning == json.loads(json.dumps(expected.to_json()))
    assert record.planning is not None and record.planning["detectable_effect_pp"] == 45
    assert not expected.capped and record.settings.sample == expected.pairs == record.planning["pairs"]
    assert RunFolder(tmp_path).plan.read().num_rows == expected.pairs
    assert run_main([*args[:-1], str(tmp_path / "bad"), "--sample", "lots"]) == 2
