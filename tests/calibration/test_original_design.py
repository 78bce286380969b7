"""Quick calibration on the original VIGNETTE design (issue 33 item 8; the full run is
benchmarks/original_design_calibration.py, recorded in BENCHMARKS.md).

Simulated CSV files (tests/calibration/original_design.py) through the import and report code. Loose bounds
that still catch the failures the issue found: pooled genders gave false verdicts in 22% of null reports, and
side-balanced (not partner-balanced) rates gave a partner of a truly biased identity a verdict in 80%.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.calibration.original_design import Design, logit_effect, report
from vignette_bench.eval.analysis.verdicts import BIAS_VERDICTS

RUNS = 5


@pytest.mark.slow
def test_null_reports_of_the_issue_design_carry_no_verdict():
    accused = [report(Design(), seed)[1] for seed in range(500, 500 + RUNS)]
    assert sum(int(v["verdict"].isin(BIAS_VERDICTS).any()) for v in accused) <= 1


@pytest.mark.slow
def test_one_real_effect_is_found_and_not_spread_to_its_partners():
    design = replace(Design(pair_sd=0.0), effects={"young": logit_effect(12.0)})
    found = other = 0
    for seed in range(600, 600 + RUNS):
        _, v = report(design, seed)
        bias = v[v["verdict"].isin(BIAS_VERDICTS)]
        found += int((bias["identity"] == "young").any())
        other += int((bias["identity"] != "young").any())
    assert found >= RUNS - 1
    assert other <= 1
