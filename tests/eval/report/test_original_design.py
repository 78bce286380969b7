"""A report on answers of real-answer shape from the original VIGNETTE design (issue 33).

Files in the original code's CSV layout (tests/calibration/original_design.py: one fixed order per pair and
gender, so identities are one-sided within a gender; right-side preference 0.72 women / 0.56 men), brought
in with `vignette import --format vignette-csv` code and reported with `make_report`. With pair-specific
effects (answers not additive in identity and side, as LLaVA's were) the side model does not fit: no
position-adjusted verdict, every identity position-confounded with the reason, the paper's number for every
identity per gender and pooled. With additive answers and a planted effect the verdicts are per gender.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest

from tests.calibration.original_design import Design, logit_effect, write
from vignette_bench.eval.importing.command import run_import
from vignette_bench.eval.report.command import make_report

GENDERED = ("age · female", "age · male", "age · both genders")


def _report(tmp_path, design: Design, seed: int) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    run = run_import("vignette-csv", write(design, seed, tmp_path / "csv"), tmp_path / "run", model_id="m")
    make_report([run], tmp_path / "out", figures="none")
    sel = pd.read_csv(tmp_path / "out" / "selection.csv", keep_default_na=False, na_values=[""])
    ver = pd.read_csv(tmp_path / "out" / "verdicts.csv", keep_default_na=False, na_values=[""])
    return sel, ver, (tmp_path / "out" / "findings.txt").read_text()


@pytest.fixture(scope="module")
def non_additive(tmp_path_factory):
    return _report(tmp_path_factory.mktemp("nonadditive"), Design(pair_sd=1.0), seed=5)


def test_every_identity_has_per_gender_rows_and_the_papers_number(non_additive):
    sel, _, _ = non_additive
    assert set(sel["dimension"]) == set(GENDERED)
    for dim in GENDERED:
        rows = sel[sel["dimension"] == dim]
        assert len(rows) == 9  # the age dimension's nine identities
        assert rows["value_paper"].notna().all() and rows["p_paper"].notna().all()
        assert rows["left_share"].notna().all()
    per_gender = sel[sel["dimension"] != "age · both genders"]
    assert ((per_gender["left_share"] >= 75) | (per_gender["left_share"] <= 25)).any()  # one-sided within a gender


def test_a_side_model_that_does_not_fit_gives_no_verdict_and_says_why(non_additive):
    sel, ver, findings = non_additive
    assert (sel["position"] == "position-confounded").all()
    per_gender = sel["dimension"] != "age · both genders"
    assert sel[per_gender]["reason"].str.contains("does not fit").all()
    assert sel[~per_gender]["reason"].str.contains("position-confounded in female, male").all()
    assert sel["fit_p"].dropna().lt(0.05).all() and sel["side_term"].notna().sum() == 18  # shown per gender
    assert (ver["verdict"] == "position-confounded").all()
    # no rate or test of the report's for them: the paper's pooled rate is not repeated as the report's
    assert sel[["value", "p", "q"]].isna().all().all()
    assert "position-confounded, no verdict — the side model does not fit" in findings
    assert "asking each pair in both orders" in findings  # what would make them testable
    assert "mixes identity with side" in findings  # the paper's clearest side-mixed rate, on the first screen


def test_the_papers_table_leaves_the_reports_columns_blank_where_nothing_was_tested(non_additive, tmp_path):
    from vignette_bench.eval.analysis.numbers import compute
    from vignette_bench.eval.pages import paper
    from vignette_bench.eval.runs import load_run

    run = run_import("vignette-csv", write(Design(pair_sd=1.0), 5, tmp_path / "csv"), tmp_path / "run", model_id="m")
    t = paper.table(compute(load_run(run).responses, model="m", detail=False).selection)
    assert len(t) == 27 and t["paper: pooled rate (%)"].notna().all()
    assert t["report: rate (%)"].isna().all() and t["report: p"].isna().all()


def test_additive_answers_give_per_gender_verdicts(tmp_path):
    design = replace(Design(pair_sd=0.0), effects={"old": logit_effect(15.0, (-0.9, -0.25))})
    sel, ver, _ = _report(tmp_path, design, seed=6)
    assert (sel["position"] == "partner- and side-balanced (side model)").all()
    found = ver[ver["verdict"].isin(["bias +", "bias −"])]
    assert set(found["identity"]) == {"old"} and set(found["dimension"]) == set(GENDERED)
    assert ver["needed_effect"].notna().all()
