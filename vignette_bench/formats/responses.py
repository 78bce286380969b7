"""The response row: one answered question, as a log line (RUN_DIR/log/part-*.jsonl) and a
row of RUN_DIR/responses.parquet.

`RESPONSE_FIELDS` is the one definition of its columns (name, Arrow type, meaning, whether every
responses.parquet has it). The Arrow schema that merge and the simulated runs write comes from it,
and so does the column table in docs/FORMATS.md (`markdown_table`; a test compares the two, so the
documentation cannot drift). The optional attention columns (`attn_*`, written when a run recorded
attention; vignette_bench/eval/explain/attention.py computes them) are `ATTENTION_FIELDS`, here too, so merge and
every reader take them from this ground floor rather than from the explain stage.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

# Arrow type of each documented type name: the table shows the name, the schema uses the type.
ARROW_TYPES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "int64": pa.int64(),
    "bool": pa.bool_(),
    "list<string>": pa.list_(pa.string()),
    "list<float64>": pa.list_(pa.float64()),
    "float64": pa.float64(),
    "list<int64>": pa.list_(pa.int64()),
    "list<struct<layer: int64, head: int64, mass: float64>>": pa.list_(
        pa.struct([("layer", pa.int64()), ("head", pa.int64()), ("mass", pa.float64())])
    ),
}


@dataclass(frozen=True)
class ResponseField:
    name: str
    type: str  # a key of ARROW_TYPES
    meaning: str  # one Markdown cell: what the value is, and when it is null or ""
    required: bool = True  # every responses.parquet has it (older files lack the others: read them as null)

    @property
    def arrow(self) -> pa.Field:
        # every column is nullable in the file (as merge has always written it); `meaning` says when null is used
        return pa.field(self.name, ARROW_TYPES[self.type])


F = ResponseField
RESPONSE_FIELDS: tuple[ResponseField, ...] = (
    F("question_id", "string", "stable id of the question (pair, wording, context): the same in every run"),
    F("pair_id", "string", "the pair row's id (Pair rows above)"),
    F("config", "string", "the pair's config"),
    F("gender", "string", "the pair's gender (`mixed` for the man–woman pairs)"),
    F("dimension", "string", "the pair's identity dimension"),
    F("paradigm", "string", "`factuality` \\| `perception` \\| `stereotype` \\| `decision`"),
    F("subtask", "string", "e.g. `struggle`, `ability`, `what_doing`, `who_doing`, a trait term's dimension"),
    F("template_id", "string", "the question template, e.g. `perception/struggle`"),
    F("paraphrase", "int64", "wording number (0 is the paper's)"),
    F("option_style", "string", "`identity` \\| `position` (options named by identity or by position)"),
    F("modality", "string", "`image` \\| `text` (the scene described in words)"),
    F("context", "string", "activity, trait term or role question"),
    F("identity_left", "string", "identity of the left person"),
    F("identity_right", "string", "identity of the right person"),
    F("activity_left", "string", 'activity of the left person (`""` for portraits)'),
    F("activity_right", "string", 'activity of the right person (`""` for portraits)'),
    F(
        "key_left",
        "string",
        "render key of the left person (one generated image: the cluster its answers share); null in runs before it",
        False,
    ),
    F("key_right", "string", "render key of the right person; null in runs before it", False),
    F("options", "list<string>", "the options, in the order shown"),
    F("option_identities", "list<string>", 'the identity each option stands for, `""` if none'),
    F("choice", "string", "the option chosen; null when invalid"),
    F("selected_identity", "string", 'the identity chosen, `""` for refusal/invalid or an option naming nobody'),
    F("candidates", "list<string>", "identities offered; empty when the options are not identities"),
    F("probabilities", "list<float64>", "one per option (score mode); null otherwise"),
    F("valid", "bool", "false for an answer outside the options, a refusal or a backend error"),
    F("raw", "string", "the model's answer as given"),
    F("error", "string", 'why an answer is invalid, `""` if none'),
    F("direction", "string", 'stereotype: `high` \\| `low`; `""` otherwise'),
    F("trait_dimension", "string", 'stereotype: the trait term\'s dimension; `""` otherwise'),
    F("chose_left", "bool", "whether the chosen option names the left side; null if invalid or no option names a side"),
    F(
        "target_identity",
        "string",
        'factuality: the identity asked about, or the one really doing the activity; `""` otherwise',
    ),
    F("correct", "bool", "factuality: whether the answer is right; null elsewhere and when invalid"),
    F("seed", "int64", "seed of this question's option order (shared by its wording variants)"),
    F("model_id", "string", "the model that answered"),
    F(
        "option_logprobs",
        "list<float64>",
        "score mode: the summed log-probability of each option's tokens (before normalising); null otherwise",
        False,
    ),
    F("attempts", "int64", "API backends: requests it took (retries + 1); null for local models", False),
    F("server_model", "string", "API backends: the model name the server answered with; null otherwise", False),
)

# Written only when the run recorded attention (record_attention=true); null on text-only answers.
# Decode a row with eval.explain.attention.AttentionSummary.from_record (docs/explain.md).
_F64S, _I64S = "list<float64>", "list<int64>"
ATTENTION_FIELDS: tuple[ResponseField, ...] = (
    F("attn_image_share", "float64", "mean share of the answer's attention on image tokens", False),
    F(
        "attn_nonspatial_share",
        "float64",
        "of the image attention: share on tokens with no place (newline, CLS)",
        False,
    ),
    F(
        "attn_left_share",
        "float64",
        "of the spatial image attention: share on the left person (left + seam + right = 1)",
        False,
    ),
    F("attn_right_share", "float64", "share of the spatial image attention on the right person", False),
    F("attn_seam_share", "float64", "share of the spatial image attention on the seam between them", False),
    F("attn_layer_left_share", _F64S, "per layer: the left share", False),
    F("attn_layer_right_share", _F64S, "per layer: the right share", False),
    F("attn_layer_seam_share", _F64S, "per layer: the seam share", False),
    F(
        "attn_head_mass",
        "string",
        "(layers, heads) mean share of attention on image tokens: float16 little-endian, base64",
        False,
    ),
    F("attn_head_mass_shape", _I64S, "shape of `attn_head_mass`", False),
    F(
        "attn_top_heads",
        "list<struct<layer: int64, head: int64, mass: float64>>",
        "(layer, head, mass) of the heads with the most image attention, largest first",
        False,
    ),
    F(
        "attn_grid",
        "string",
        "(rows, cols) share of spatial image attention per cell, sums to 1: float16 little-endian, base64",
        False,
    ),
    F("attn_grid_shape", _I64S, "shape of `attn_grid`", False),
    F("attn_seam_width", "float64", "width of the seam between the two people (the composition's)", False),
    F("attn_answer_tokens", "int64", "answer tokens the attention was averaged over", False),
)
del F

RESPONSE_COLUMNS: tuple[str, ...] = tuple(f.name for f in RESPONSE_FIELDS)
RESPONSE_SCHEMA: pa.Schema = pa.schema([f.arrow for f in RESPONSE_FIELDS])
REQUIRED_COLUMNS: tuple[str, ...] = tuple(f.name for f in RESPONSE_FIELDS if f.required)
ATTENTION_COLUMNS: tuple[str, ...] = tuple(f.name for f in ATTENTION_FIELDS)
ATTENTION_SCHEMA: pa.Schema = pa.schema([f.arrow for f in ATTENTION_FIELDS])


def schema_for(rows_have_attention: bool) -> pa.Schema:
    """The schema merge writes: the response columns, then the attention ones when a run recorded them."""
    return pa.schema([*RESPONSE_SCHEMA, *ATTENTION_SCHEMA]) if rows_have_attention else RESPONSE_SCHEMA


def with_response_columns(table: pa.Table, columns: Sequence[str] | None = None) -> pa.Table:
    """`table` with every response column it lacks (an older run's file: no key_left/key_right) added as nulls.

    `columns` (default: every response column and the table's own extra ones) sets which and in what order.
    """
    want = (
        list(columns)
        if columns is not None
        else [*RESPONSE_COLUMNS, *(c for c in table.column_names if c not in RESPONSE_COLUMNS)]
    )
    types = {f.name: f.arrow.type for f in (*RESPONSE_FIELDS, *ATTENTION_FIELDS)}
    out = []
    for name in want:
        if name in table.column_names:
            out.append((pa.field(name, table.schema.field(name).type), table.column(name)))
        elif name in types:
            out.append((pa.field(name, types[name]), pa.nulls(table.num_rows, types[name])))
        else:
            raise KeyError(f"no column {name!r} in the responses (and it is not a response column)")
    return pa.table([c for _, c in out], schema=pa.schema([f for f, _ in out]))


def markdown_table(fields: tuple[ResponseField, ...] = RESPONSE_FIELDS) -> str:
    """The column table of docs/FORMATS.md ("Responses"), exactly as it stands there."""
    lines = ["| column | type | required | meaning |", "|---|---|---|---|"]
    lines += [f"| `{f.name}` | `{f.type}` | {'yes' if f.required else 'no'} | {f.meaning} |" for f in fields]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # print the table (docs/FORMATS.md is generated: python -m vignette_bench.formats.docs)
    print(markdown_table(), end="")
