"""The `evaluate` base class of the VIGNETTE measures: inputs are counted as they arrive.

The computation lives in `vignette_bench.stats.measure.Measure` and its subclasses in
vignette_bench/stats/measures/; an evaluate module's class is ``class X(XMeasure, VignetteMetric)``
with only `_info` of its own.
"""

from __future__ import annotations

import abc

import datasets
import evaluate

from vignette_bench.stats.measure import Measure

VIGNETTE_CITATION = """\
@misc{raj2025vignette,
  title  = {VIGNETTE: Socially Grounded Bias Evaluation for Vision-Language Models},
  author = {Raj, Chahat and Wei, Bowen and Caliskan, Aylin and Anastasopoulos, Antonios and Zhu, Ziwei},
  year   = {2025}
}
"""


def metric_info(
    description: str, inputs_description: str, extra_string_columns: tuple[str, ...] = ()
) -> evaluate.MetricInfo:
    """evaluate's MetricInfo of a measure: its texts, the paper's citation and the declared inputs.

    Every measure declares `selected`, `candidates`, `context`, `candidate_sides` and
    `candidate_clusters`, plus `extra_string_columns` (strings). The Features describe the input contract only: VignetteMetric counts rows itself,
    so evaluate never encodes rows with them.
    """
    features = {
        "selected": datasets.Value("string"),
        "candidates": datasets.List(datasets.Value("string")),
        "context": datasets.Value("string"),
        "candidate_sides": datasets.List(datasets.Value("string")),
        "candidate_clusters": datasets.List(datasets.Value("string")),
    }
    features.update({name: datasets.Value("string") for name in extra_string_columns})
    return evaluate.MetricInfo(
        description=description,
        citation=VIGNETTE_CITATION,
        inputs_description=inputs_description,
        features=datasets.Features(features),
    )


class VignetteMetric(Measure, evaluate.Metric, metaclass=abc.ABCMeta):
    """evaluate's Metric whose add_batch/add/compute are the Measure's (counts, not rows).

    Abstract, so that evaluate's loader picks the concrete metric class of a module that imports it.
    """
