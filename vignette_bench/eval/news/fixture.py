"""A FIXTURE judge for the offline news demo: schema-following, deterministic, and meaningless.

The demo's real judge is an untrained tiny VLM whose replies never parse, so a newcomer would only
ever see failures. This stand-in shows the success path end to end — an answer judged on every
dimension, scores in the results table — and is labelled a fixture wherever it appears: its
scores are a hash of the prompt (0–100), its snippet names itself. It is the same idea as the test
suite's schema fixture (tests/eval/serve/test_server.py), never a measurement of anything.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from vignette_bench.eval.adapters.base import ChoiceRequest, ChoiceResult, ModelAdapter, TextRequest, TextResult

FIXTURE_JUDGE_ID = "fixture/hash-judge (NOT a judge: scores are a hash of the prompt)"
FIXTURE_NOTE = "FIXTURE judge: its scores are a hash of the prompt, not a judgement; they show the plumbing only"


def is_fixture(judge_id: str) -> bool:
    """Whether a judgement's judge is the fixture (its numbers must be labelled wherever they appear)."""
    return judge_id.startswith("fixture/")


def fill_schema(schema: dict[str, Any] | None, prompt: str) -> dict[str, Any]:
    """A JSON object valid under `schema` whose numbers are a hash of the prompt, within their range."""
    digest = int(hashlib.sha256(prompt.encode()).hexdigest()[:8], 16)
    out: dict[str, Any] = {}
    for name, prop in (schema or {}).get("properties", {}).items():
        if "enum" in prop:
            out[name] = prop["enum"][digest % len(prop["enum"])]
        elif prop.get("type") in ("number", "integer"):
            low, high = prop.get("minimum", 0), prop.get("maximum", 100)
            out[name] = low + digest % (int(high - low) + 1)
        else:
            out[name] = f"fixture {name}"
    return out


class FixtureJudge(ModelAdapter):
    """FIXTURE: replies to every judge prompt with a schema-valid JSON object (see the module docstring)."""

    name = FIXTURE_JUDGE_ID

    def choose(self, batch: list[ChoiceRequest]) -> list[ChoiceResult]:
        raise TypeError("the fixture judge only answers open (judge) prompts")

    def generate_text(self, batch: list[TextRequest]) -> list[TextResult]:
        return [TextResult(r.question_id, json.dumps(fill_schema(r.json_schema, r.prompt))) for r in batch]

    def provenance(self) -> dict[str, Any]:
        return {"adapter": "fixture", "model_id": FIXTURE_JUDGE_ID}
