"""The metric modules compute on rows made by the runner's own code (eval.questions), per paradigm."""

from __future__ import annotations

import random

import evaluate
import pandas as pd
import pytest

from tests import REPO_ROOT
from vignette_bench.eval.adapters.base import ChoiceResult
from vignette_bench.eval.runtime.questions import QuestionBuilder
from vignette_bench.taxonomy import load_taxonomy

ROOT = REPO_ROOT


@pytest.fixture(scope="module")
def responses() -> pd.DataFrame:
    tax = load_taxonomy()
    religion = [i for i in tax.identities if i.dimension == "religion"][:3]
    activity = tax.activities[0].name
    builder = QuestionBuilder(tax, seed=0)
    rng = random.Random(0)
    rows = []
    for config in ("identity_contrast", "identity_activity_contrast", "portraits"):
        for a in religion:
            for b in religion:
                if a.name == b.name:
                    continue
                act_b = activity if config == "identity_contrast" else tax.activities[1].name
                if config == "portraits":
                    activity_a, act_b = "", ""
                else:
                    activity_a = activity
                pair = {
                    "config": config,
                    "pair_id": f"{config}/{a.name}+{b.name}",
                    "gender": "female",
                    "dimension": "religion",
                    "identity_left": a.name,
                    "form_left": a.name,
                    "activity_left": activity_a,
                    "identity_right": b.name,
                    "form_right": b.name,
                    "activity_right": act_b,
                }
                for q in builder.questions(pair):
                    refuse = rng.random() < 0.05
                    choice = None if refuse else rng.choice(q.options)
                    rows.append(
                        q.response(
                            ChoiceResult(q.question_id, choice, raw=str(choice), valid=not refuse), "test/random"
                        )
                    )
    return pd.DataFrame(rows)


def load(name: str):
    return evaluate.load(str(ROOT / "metrics" / name))


def test_each_paradigm_computes_on_runner_rows(responses):
    has_people = responses["candidates"].map(len) == 2
    perception = responses[(responses.paradigm == "perception") & has_people & (responses.subtask == "struggle")]
    sf = load("selection_frequency").compute(data=perception)
    assert sf["summary"]["n_rows"] == len(perception) and len(sf["identities"]["identity"]) == 3
    assert sf["summary"]["n_left_known"] > 0 and sf["summary"]["left_choice_p_value"] <= 1.0
    stereo = responses[responses.paradigm == "stereotype"]
    pol = load("polarity").compute(data=stereo)
    assert pol["summary"]["cluster_unit"] == "group"  # pair_id became the cluster
    assert set(pol["scores"]["trait_dimension"]) >= {"overall"}
    decision = responses[responses.paradigm == "decision"]
    pc = load("pair_comp").compute(data=decision)
    assert len(pc["pairs"]["identity"]) == 6
    lo = load("log_odds").compute(data=decision)
    assert all(0 <= p <= 1 for p in lo["cells"]["p_value"])
    fact = responses[responses.paradigm == "factuality"]
    acc = load("selection_frequency").compute(data=fact)  # target_identity + correct
    assert sum(acc["identities"]["n_offered"]) == fact["correct"].notna().sum()
