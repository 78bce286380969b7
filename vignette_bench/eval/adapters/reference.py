"""Reference responders that need no model: they calibrate the metrics and the runner.

* ``RandomResponder`` picks an option uniformly at random. Its choice depends only on the seed
  and the question id, never on batching, order or sharding, so any run of it can be repeated
  exactly; every metric should find no bias in it (a null model).
* ``AlwaysLeftResponder`` always picks the option that names the left person (or, on
  activity-contrast pairs, the left person's activity): a maximal position bias, which the
  position-bias measures must detect. Where no option names a side (e.g. "what is X doing?")
  it abstains, recorded as invalid.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Iterable
from typing import Any

from vignette_bench.eval.adapters.base import ChoiceRequest, ChoiceResult, ModelAdapter


class RandomResponder(ModelAdapter):
    name = "random"

    def __init__(self, seed: int = 0, delay_s: float = 0.0):
        self.seed = int(seed)
        self.delay_s = float(delay_s)  # per batch: stands in for model latency in tests and benchmarks

    def choose(self, batch: list[ChoiceRequest]) -> list[ChoiceResult]:
        if self.delay_s:
            time.sleep(self.delay_s)
        out = []
        for req in batch:
            digest = hashlib.blake2b(f"{self.seed}\x1f{req.question_id}".encode(), digest_size=8).digest()
            choice = random.Random(int.from_bytes(digest, "big")).choice(req.options)
            # No probabilities: metrics then count the sampled choices, a null model with real sampling noise.
            out.append(ChoiceResult(req.question_id, choice, raw=choice))
        return out

    def provenance(self) -> dict[str, Any]:
        return {
            "model_id": f"reference/random-seed{self.seed}",
            "model_revision": "",
            "adapter": self.name,
            "seed": self.seed,
        }


class AlwaysLeftResponder(ModelAdapter):
    """Needs to know which option names the left person: the runner calls ``prepare(questions)``."""

    name = "always-left"

    def __init__(self) -> None:
        self._left: dict[str, str | None] = {}

    def prepare(self, questions: Iterable[Any]) -> None:
        """Learn the left option of each question (objects with ``question_id`` and ``left_option``)."""
        for q in questions:
            self._left[q.question_id] = q.left_option

    def choose(self, batch: list[ChoiceRequest]) -> list[ChoiceResult]:
        out = []
        for req in batch:
            if req.question_id not in self._left:
                raise KeyError(
                    f"always-left: question {req.question_id} was not prepared; call prepare(questions) first"
                )
            left = self._left.pop(req.question_id)
            if left is None:
                out.append(
                    ChoiceResult(req.question_id, None, raw="", valid=False, error="no option names the left person")
                )
            else:
                out.append(ChoiceResult(req.question_id, left, raw=left))
        return out

    def provenance(self) -> dict[str, Any]:
        return {"model_id": "reference/always-left", "model_revision": "", "adapter": self.name}


def reference_adapter(spec: str, default_seed: int = 0) -> ModelAdapter | None:
    """'random', 'random:seed=3,delay=0.01' or 'always-left' → a responder; None for any other spec."""
    name, _, args = spec.partition(":")
    if name not in ("random", "always-left"):
        return None
    kwargs: dict[str, str] = {}
    for item in filter(None, (a.strip() for a in args.split(","))):
        key, sep, value = item.partition("=")
        if not sep or key not in ({"seed", "delay"} if name == "random" else set()):
            raise ValueError(
                f"model spec {spec!r}: unknown option {item!r}; random takes seed=N,delay=SECONDS, always-left none"
            )
        kwargs[key] = value
    if name == "always-left":
        return AlwaysLeftResponder()
    return RandomResponder(int(kwargs.get("seed", default_seed)), float(kwargs.get("delay", 0.0)))


def from_spec(spec: str, parsed: Any, defaults: dict[str, Any]) -> ModelAdapter:
    """The backend table's factory for `random[:seed=N]` and `always-left` (vignette_bench/eval/adapters/backends.py)."""
    adapter = reference_adapter(parsed.target, int(defaults.get("seed", 0)))
    assert adapter is not None, spec  # parse_spec only hands over the reference names
    return adapter
