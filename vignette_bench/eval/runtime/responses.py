"""The response row: one answered question, as a log line (RUN_DIR/log/part-*.jsonl) and a
row of RUN_DIR/responses.parquet.

`RESPONSE_FIELDS` is the one definition of its columns. The Arrow schema that merge and the
simulated runs write comes from it, and so does the column table in docs/FORMATS.md
(`markdown_table`; a test compares the two, so the documentation cannot drift). Optional
attention columns (`attn_*`, eval.explain.attention) are defined where they are computed.
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
}


@dataclass(frozen=True)
class ResponseField:
    name: str
    type: str  # a key of ARROW_TYPES
    meaning: str  # one Markdown cell: what the value is, and when it is null or ""

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
    ),
    F("key_right", "string", "render key of the right person; null in runs before it"),
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
    ),
    F("attempts", "int64", "API backends: requests it took (retries + 1); null for local models"),
    F("server_model", "string", "API backends: the model name the server answered with; null otherwise"),
)
del F

RESPONSE_COLUMNS: tuple[str, ...] = tuple(f.name for f in RESPONSE_FIELDS)
RESPONSE_SCHEMA: pa.Schema = pa.schema([f.arrow for f in RESPONSE_FIELDS])


def with_response_columns(table: pa.Table, columns: Sequence[str] | None = None) -> pa.Table:
    """`table` with every response column it lacks (an older run's file: no key_left/key_right) added as nulls.

    `columns` (default: every response column and the table's own extra ones) sets which and in what order.
    """
    want = (
        list(columns)
        if columns is not None
        else [*RESPONSE_COLUMNS, *(c for c in table.column_names if c not in RESPONSE_COLUMNS)]
    )
    types = {f.name: f.arrow.type for f in RESPONSE_FIELDS}
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
    lines = ["| column | type | meaning |", "|---|---|---|"]
    lines += [f"| `{f.name}` | `{f.type}` | {f.meaning} |" for f in fields]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # print the table, to paste into docs/FORMATS.md after changing a field
    print(markdown_table(), end="")
