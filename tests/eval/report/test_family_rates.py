"""A family's refusal and position rates come from the sums of its dimensions' counts (`numbers._family_summary`):
the same numbers as counting the whole family in one store, refusals and rows without a dimension included."""

from __future__ import annotations

import pandas as pd

from vignette_bench.eval.analysis import numbers
from vignette_bench.eval.simulate import SimSpec, simulate


def _counted_at_once(frame: pd.DataFrame) -> pd.DataFrame:
    rows = [
        numbers._rates_row(family, numbers._counted_summary("selection_frequency", inputs))
        for family, inputs in numbers.family_inputs(frame).items()
    ]
    return pd.DataFrame(rows)


def test_family_rates_equal_one_count_over_the_family():
    frame = simulate(SimSpec(seed=4, p_left=0.6, refusal_by_identity=(("hindu", 0.3),), dimensions=("religion", "age")))
    frame.loc[frame.index[::7], "dimension"] = None  # counted in the family's rates, measured in no dimension
    rates = numbers.compute(frame, detail=False).rates
    assert (rates["invalid_rate"] > 0).all() and (rates["left_rate"] > 0.5).any()
    pd.testing.assert_frame_equal(rates, _counted_at_once(frame), check_exact=True)
