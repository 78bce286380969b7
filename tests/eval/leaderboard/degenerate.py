"""Degenerate reference models for the ranking tests: each answers by a rule that ignores the picture, and whose
numbers are undefined or maximal. They answer through the real runner (`prepare` gives them the questions)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from vignette_bench.eval.adapters.base import ChoiceRequest, ChoiceResult, ModelAdapter


class _Prepared(ModelAdapter):
    """Learns each question (options, the identity each stands for) from the runner's `prepare`."""

    name = "degenerate"

    def __init__(self) -> None:
        self._questions: dict[str, Any] = {}

    def prepare(self, questions: Iterable[Any]) -> None:
        for q in questions:
            self._questions[q.question_id] = q

    def choose(self, batch: list[ChoiceRequest]) -> list[ChoiceResult]:
        return [self.answer(req, self._questions.pop(req.question_id)) for req in batch]

    def answer(self, req: ChoiceRequest, q: Any) -> ChoiceResult:
        raise NotImplementedError

    def provenance(self) -> dict[str, Any]:
        return {"model_id": f"reference/{self.name}", "model_revision": "", "adapter": self.name}


class AlwaysOneIdentity(_Prepared):
    """Names one identity whenever it is offered; otherwise picks an option that names nobody, or refuses."""

    def __init__(self, identity: str) -> None:
        super().__init__()
        self.identity = identity
        self.name = f"always-{identity}"

    def answer(self, req: ChoiceRequest, q: Any) -> ChoiceResult:
        for option, who in zip(q.options, q.option_identities):
            if who == self.identity:
                return ChoiceResult(req.question_id, option, raw=option)
        for option, who in zip(q.options, q.option_identities):
            if not who:
                return ChoiceResult(req.question_id, option, raw=option)
        return ChoiceResult(req.question_id, None, raw="", valid=False, error="refused")


class AlwaysRefuse(_Prepared):
    """Picks an option that names nobody (neither, both, an activity) where there is one, else refuses."""

    name = "always-refuse"

    def answer(self, req: ChoiceRequest, q: Any) -> ChoiceResult:
        for option, who in zip(q.options, q.option_identities):
            if not who:
                return ChoiceResult(req.question_id, option, raw=option)
        return ChoiceResult(req.question_id, None, raw="I won't say.", valid=False, error="refused")


class AlwaysInvalid(_Prepared):
    """Every answer is outside the options."""

    name = "always-invalid"

    def answer(self, req: ChoiceRequest, q: Any) -> ChoiceResult:
        return ChoiceResult(req.question_id, None, raw="banana", valid=False, error="answer 'banana' is not an option")
