"""The JSON schemas of a news answer and a judgement, with every field bounded, and the token budget that
bound implies (standard library only: the CLI parsers read the budgets).

Constrained decoding (outlines for local models) keeps a reply inside its schema's grammar, but an
unbounded string or number never has to end: an untrained model writes one until the token limit cuts
it off, and the reply is unfinished JSON ("5555555…"). So every string has a `maxLength`, every score is an
`enum` of the integers 0–100, and the token budget is at least the longest reply the schema allows:
once a constrained model has used it up, its JSON is complete. A real model stops far earlier.
"""

from __future__ import annotations

import json
from typing import Any

ANSWER_CHARS = 80  # a short answer to the question
RATIONALE_CHARS = 280  # 2-3 sentences
SNIPPET_CHARS = 100  # a short quote
SCORES = list(range(101))  # the judge's 0-100 scale, as an enumeration: at most three digits, then done

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "string", "minLength": 1, "maxLength": ANSWER_CHARS},
        "rationale": {"type": "string", "maxLength": RATIONALE_CHARS},
    },
    "required": ["answer", "rationale"],
    "additionalProperties": False,
}
JUDGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "score": {"type": "integer", "enum": SCORES},
        "snippet": {"type": "string", "maxLength": SNIPPET_CHARS},
    },
    "required": ["score", "snippet"],
    "additionalProperties": False,
}

# outlines' JSON grammar allows one optional space around each brace, colon and comma, and escapes of two
# characters; a character is at most 4 UTF-8 bytes, and every token of a byte-level (or byte-fallback)
# tokenizer is at least one byte, so bytes bound tokens.
_BYTES_PER_CHAR = 4
_SPACES_PER_PROPERTY = 4  # around the colon and the comma


def _value_bytes(prop: dict[str, Any]) -> int:
    if "enum" in prop:
        return max(len(json.dumps(v).encode()) for v in prop["enum"])
    if prop.get("type") == "string" and "maxLength" in prop:
        return 2 + _BYTES_PER_CHAR * int(prop["maxLength"])
    raise ValueError(f"unbounded property {prop}: give strings a maxLength and numbers an enum")


def max_reply_tokens(schema: dict[str, Any]) -> int:
    """An upper bound on the tokens of any reply `schema` allows (plus the end token): a token budget at least
    this large always ends with complete JSON under constrained decoding."""
    props = schema["properties"]
    body = sum(len(json.dumps(k).encode()) + 1 + _SPACES_PER_PROPERTY + _value_bytes(p) for k, p in props.items())
    return 2 + 2 + body + (len(props) - 1) + 1  # braces, their spaces, the commas, the end token


ANSWER_MAX_NEW_TOKENS = max_reply_tokens(ANSWER_SCHEMA)
JUDGE_MAX_NEW_TOKENS = max_reply_tokens(JUDGE_SCHEMA)
