"""The news schemas are bounded, and their token budget holds the longest reply outlines' grammar allows."""

from __future__ import annotations

import json
import re

import pytest

from vignette_bench.eval.news.schemas import (
    ANSWER_MAX_NEW_TOKENS,
    ANSWER_SCHEMA,
    JUDGE_MAX_NEW_TOKENS,
    JUDGE_SCHEMA,
    max_reply_tokens,
)


def _longest(schema: dict, char: str) -> str:
    """The longest reply the grammar accepts: every optional space present, every string at its maxLength of
    `char`, every enum at its longest value."""
    parts = []
    for key, prop in schema["properties"].items():
        if "enum" in prop:
            value = max((json.dumps(v) for v in prop["enum"]), key=len)
        else:
            value = json.dumps(char * prop["maxLength"], ensure_ascii=False)
        parts.append(f"{json.dumps(key)} : {value}")
    return "{ " + " , ".join(parts) + " }"


@pytest.mark.parametrize(
    ("schema", "budget"), [(ANSWER_SCHEMA, ANSWER_MAX_NEW_TOKENS), (JUDGE_SCHEMA, JUDGE_MAX_NEW_TOKENS)]
)
@pytest.mark.parametrize("char", ["a", "é", "😀", "\n"])  # 1-, 2-, 4-byte characters and a 2-byte escape
def test_the_budget_holds_the_longest_reply_in_bytes(schema: dict, budget: int, char: str) -> None:
    from outlines_core.json_schema import build_regex_from_schema

    reply = _longest(schema, char)
    assert re.fullmatch(build_regex_from_schema(json.dumps(schema)), reply)  # outlines' own grammar accepts it
    assert len(reply.encode()) + 1 <= budget  # every token is at least a byte; +1: the end token


def test_every_field_is_bounded() -> None:
    assert JUDGE_SCHEMA["properties"]["score"]["enum"] == list(range(101))
    assert max_reply_tokens(JUDGE_SCHEMA) == JUDGE_MAX_NEW_TOKENS
    with pytest.raises(ValueError, match="unbounded"):
        max_reply_tokens({"properties": {"score": {"type": "number"}}})
    with pytest.raises(ValueError, match="unbounded"):
        max_reply_tokens({"properties": {"snippet": {"type": "string"}}})
