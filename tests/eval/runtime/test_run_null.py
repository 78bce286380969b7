"""The random responder's runs feed the metric modules directly and look like the null model.

Each metric tests many identities (cells, pairs) and corrects them with Benjamini-Hochberg, so
under the null a family shows a BH-significant finding with probability at most alpha = 5%.
One run can be unlucky by design; over several responder seeds the share of families with a
finding must stay near 5%. The always-left responder is the positive control: the position-bias
measure must find it at once.
"""

import evaluate
import pandas as pd
import pytest
from scipy import stats

from tests import REPO_ROOT
from vignette_bench.dataset_builder.sample import build_sample
from vignette_bench.eval.demo import CHOICE_COLUMNS
from vignette_bench.eval.runtime.questions import Variants
from vignette_bench.eval.runtime.run import RunSettings, run

ROOT = REPO_ROOT
SEEDS = (0, 1, 2)
ALPHA = 0.05
# Text modality: the same questions without composing images, so several runs stay fast.
VARIANTS = Variants((0, 1, 2), ("identity", "position"), ("text",))


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    identities = ("man", "woman", "muslim", "hindu", "christian", "old", "young", "child")
    return str(
        build_sample(
            tmp_path_factory.mktemp("src"),
            size=32,
            identities=identities,
            activities=("cooking", "driving", "teaching"),
        )
    )


@pytest.fixture(scope="module")
def metrics():
    return {
        name: evaluate.load(str(ROOT / "vignette_bench" / "metrics" / name))
        for name in ("selection_frequency", "log_odds", "pair_comp", "polarity")
    }


def responses(source, out, model):
    frames = []
    for config, paradigms in (("identity_contrast", ("perception", "decision")), ("portraits", ("stereotype",))):
        settings = RunSettings(
            source=source, config=config, model=model, seed=0, paradigms=paradigms, variants=VARIANTS
        )
        frames.append(pd.read_parquet(run(settings, out / config, batch_size=512, progress=False).responses))
    return pd.concat(frames, ignore_index=True)


def families(df, metrics):
    """(name, p-values, BH q-values, summary) for each metric family the report shows."""
    df = df[list(CHOICE_COLUMNS) + ["paradigm"]]
    out = []
    for paradigm, rows in df.groupby("paradigm"):
        for name in ("selection_frequency", "log_odds", "pair_comp"):
            result = metrics[name].compute(data=rows) if name == "pair_comp" else metrics[name].compute(data=rows)
            table = pd.DataFrame(
                result["identities" if name == "selection_frequency" else "cells" if name == "log_odds" else "pairs"]
            )
            out.append((f"{name}/{paradigm}", table["p_value"], table["q_value"], result["summary"]))
    scores = pd.DataFrame(metrics["polarity"].compute(data=df[df.paradigm == "stereotype"])["scores"])
    for dim, table in scores.groupby("trait_dimension"):  # polarity corrects within each trait dimension
        out.append((f"polarity/{dim}", table["p_value"], table["q_value"], {}))
    return out


def test_random_responder_shows_no_bias_after_bh(source, metrics, tmp_path):
    found, tested, pvalues, lefts = [], 0, [], []
    for seed in SEEDS:
        df = responses(source, tmp_path / f"seed{seed}", f"random:seed={seed}")
        assert df["valid"].all() and set(df["selected_identity"]) <= set(df["identity_left"]) | set(
            df["identity_right"]
        )
        for name, p, q, summary in families(df, metrics):
            tested += 1
            pvalues += list(p)
            if (q < ALPHA).any():
                found.append((seed, name))
            if "left_choice_p_value" in summary:
                lefts.append(summary["left_choice_p_value"])
    # At most alpha per family under the null: 48 families, expect <= 2.4 with a finding.
    # P(Binomial(48, 0.05) >= 9) < 0.001, so 9 or more means the pipeline or a test is biased.
    assert tested == 16 * len(SEEDS)
    assert len(found) < 9, found
    pvalues = pd.Series(pvalues)
    assert (pvalues < ALPHA).mean() < 0.08  # Fisher's test is conservative on discrete counts; never anti-conservative
    assert stats.combine_pvalues(lefts, method="fisher").pvalue > 1e-3  # no position bias


def test_always_left_is_caught_by_the_position_bias_measure(source, metrics, tmp_path):
    df = responses(source, tmp_path, "always-left")
    summary = metrics["selection_frequency"].compute(data=df[list(CHOICE_COLUMNS)])["summary"]
    assert summary["left_choice_rate"] == 100.0 and summary["left_choice_p_value"] < 1e-100
