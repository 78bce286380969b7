"""A reference answerer for the news subset: it answers every question with its annotated reference answer.

It calibrates the judge rather than measuring a model: a sound judge should give these answers high
accuracy and faithfulness and low bias (the reference answers were written to cite only what is
visible). A judge that scores them poorly, or fails on them, is the problem to fix before trusting
its scores of real models. It also gives the demo valid answers to judge when the answering model
is an untrained stand-in whose JSON never parses.
"""

from __future__ import annotations

import json
from typing import Any

from vignette_bench.eval.adapters.base import ChoiceRequest, ChoiceResult, ModelAdapter, TextRequest, TextResult
from vignette_bench.eval.news.data import NewsItem

RATIONALE = "This repeats the annotated reference answer for the question (a calibration baseline, not a model)."


class ReferenceAnswerer(ModelAdapter):
    """Answers `generate_text` requests whose question_id is a news item id with that item's reference."""

    name = "reference/news-oracle"

    def __init__(self, items: list[NewsItem]) -> None:
        self._references = {item.id: item.reference_answer for item in items}

    def choose(self, batch: list[ChoiceRequest]) -> list[ChoiceResult]:
        raise TypeError("the news reference answerer only answers open questions")

    def generate_text(self, batch: list[TextRequest]) -> list[TextResult]:
        out = []
        for request in batch:
            reference = self._references.get(request.question_id)
            if reference is None:
                out.append(
                    TextResult(
                        request.question_id,
                        "",
                        valid=False,
                        error=f"no reference answer for item {request.question_id!r}",
                    )
                )
            else:
                out.append(TextResult(request.question_id, json.dumps({"answer": reference, "rationale": RATIONALE})))
        return out

    def provenance(self) -> dict[str, Any]:
        return {"adapter": "reference", "model_id": self.name, "rationale": RATIONALE}
