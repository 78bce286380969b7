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

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from vignette_bench.errors import VignetteError

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


# --- the one reader ---------------------------------------------------------------------------------
PROBABILITY_TOLERANCE = 1e-3  # |sum(probabilities) - 1| allowed (the runner normalises in float64)
MAX_PROBLEMS = 20  # problems listed in one error; the count says how many more


class ResponsesError(VignetteError):
    """A responses table contradicts itself; the message names the file, question id and column of each problem."""

    def __init__(self, source: str, problems: Sequence[str], total: int | None = None):
        self.source, self.problems = source, list(problems)
        total = len(self.problems) if total is None else total
        more = f"\n  … and {total - len(self.problems)} more" if total > len(self.problems) else ""
        super().__init__(
            f"{source}: {total} problem(s) in the responses (docs/FORMATS.md, Responses):\n  "
            + "\n  ".join(self.problems)
            + more
        )


def _seq(value: Any) -> list[Any] | None:
    """A list cell as a Python list (pandas gives numpy arrays, Arrow gives lists); None for a null cell."""
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    try:
        return list(value)
    except TypeError:
        return None


def _null(value: Any) -> bool:
    """None, NaN or pandas' NA (read without importing pandas)."""
    return (
        value is None
        or (isinstance(value, float) and math.isnan(value))
        or type(value).__name__ in ("NAType", "NaTType")
    )


def _expected_side(row: Mapping[str, Any], idx: int) -> str | None:
    """The side the chosen option names, as the runner derives it (questions.py option_sides):
    "left"/"right", "" when it names nobody's side, None when the row cannot tell (same identity both sides)."""
    identities = _seq(row.get("option_identities"))
    identity = identities[idx] if identities is not None and idx < len(identities) else None
    if identity:
        left, right = row.get("identity_left"), row.get("identity_right")
        if left == right:
            return None
        return "left" if identity == left else "right" if identity == right else ""
    if str(row.get("template_id") or "").startswith("perception_activity/"):  # options are the two activities
        choice = row.get("choice")
        left, right = row.get("activity_left"), row.get("activity_right")
        if left == right:
            return None
        return "left" if choice == left else "right" if choice == right else ""
    return ""


def _expected_correct(row: Mapping[str, Any], idx: int) -> bool | None | str:
    """factuality only: whether the chosen option is the answer ("?" when the row cannot tell)."""
    if row.get("paradigm") != "factuality":
        return None
    identities = _seq(row.get("option_identities")) or []
    if any(identities):  # who is doing it: the target person is the answer
        if row.get("identity_left") == row.get("identity_right"):
            return "?"
        return identities[idx] == row.get("target_identity") if idx < len(identities) else "?"
    return row.get("choice") == row.get("context")  # what they are doing: the true activity is the answer


def outcome(row: Mapping[str, Any]) -> dict[str, Any]:
    """selected_identity, chose_left and correct as the runner derives them from choice + options (a valid
    row; questions.py `Question.response`). A value the row cannot tell (the same identity on both sides)
    is left as the row has it."""
    options = _seq(row.get("options")) or []
    choice = row.get("choice")
    if not row.get("valid") or choice not in options:
        return {"selected_identity": "", "chose_left": None, "correct": None}
    idx = options.index(choice)
    identities = _seq(row.get("option_identities")) or [""] * len(options)
    side = _expected_side(row, idx)
    correct = _expected_correct(row, idx)
    return {
        "selected_identity": identities[idx],
        "chose_left": row.get("chose_left") if side is None else (None if not side else side == "left"),
        "correct": row.get("correct") if correct == "?" else correct,
    }


def row_problems(row: Mapping[str, Any]) -> list[str]:
    """What one row says against itself, each as "column: why" (empty when consistent).

    Checks only the columns the row has, so an older run's file is read as far as it goes.
    """
    out: list[str] = []
    valid = row.get("valid")
    if type(valid).__name__ == "bool_":  # numpy's bool
        valid = bool(valid)
    options = _seq(row.get("options")) if "options" in row else None
    choice = row.get("choice") if "choice" in row else None
    choice = None if _null(choice) else choice
    idx: int | None = None
    if valid is True or valid is False:
        pass
    elif "valid" in row:
        out.append(f"valid: {valid!r} is not true or false")
        return out
    if "options" in row and "choice" in row:
        if options is None:
            out.append("options: null")
        elif len(set(options)) != len(options):
            out.append(f"options: {options} repeat an option")
        elif valid:
            if choice is None:
                out.append("choice: null on a valid row")
            elif choice not in options:
                out.append(f"choice: {choice!r} is not one of the options {options}")
            else:
                idx = options.index(choice)
        elif choice is not None:
            out.append(f"choice: {choice!r} on an invalid row (the runner records null)")
    if options is not None and "option_identities" in row:
        identities = _seq(row.get("option_identities"))
        if identities is None or len(identities) != len(options):
            out.append(f"option_identities: {identities} does not match the {len(options)} option(s)")
            idx = None
    if "selected_identity" in row:
        selected = row.get("selected_identity")
        selected = "" if _null(selected) else selected
        if idx is not None and "option_identities" in row:
            want = (_seq(row.get("option_identities")) or [""] * len(options or []))[idx]
            if selected != want:
                out.append(f"selected_identity: {selected!r}, but choice {choice!r} stands for {want!r}")
        elif valid is False and selected != "":
            out.append(f'selected_identity: {selected!r} on an invalid row (the runner records "")')
    if "chose_left" in row:
        chose_left = row.get("chose_left")
        chose_left = None if _null(chose_left) else bool(chose_left)
        if idx is not None and "option_identities" in row:
            side = _expected_side(row, idx)
            if side is not None:
                want_left = None if not side else side == "left"
                if chose_left != want_left:
                    out.append(f"chose_left: {chose_left}, but choice {choice!r} names side {side or 'none'!r}")
        elif valid is False and chose_left is not None:
            out.append(f"chose_left: {chose_left} on an invalid row (the runner records null)")
    if "correct" in row:
        correct = row.get("correct")
        correct = None if _null(correct) else bool(correct)
        if idx is not None and "paradigm" in row:
            want = _expected_correct(row, idx)
            if want != "?" and correct != want:
                out.append(f"correct: {correct}, but choice {choice!r} makes it {want}")
        elif valid is False and correct is not None:
            out.append(f"correct: {correct} on an invalid row (the runner records null)")
    if "probabilities" in row:
        probs = _seq(row.get("probabilities"))
        if probs is not None:
            try:
                values = [float(p) for p in probs]
            except (TypeError, ValueError):
                values = []
                out.append(f"probabilities: {probs} are not numbers")
            if values:
                if not all(math.isfinite(p) for p in values):
                    out.append(f"probabilities: {values} are not all finite")
                elif not all(0 <= p <= 1 for p in values):  # [1.5, -0.5] sums to 1: name the real cause
                    out.append(f"probabilities: {values} has values outside [0, 1]")
                elif abs(sum(values) - 1) > PROBABILITY_TOLERANCE:
                    out.append(f"probabilities: {values} sum to {sum(values):.6g}, not 1")
                if options is not None and len(values) != len(options):
                    out.append(f"probabilities: {len(values)} for {len(options)} option(s)")
    return out


# The columns each derived column follows from (`outcome`, questions.py `Question.response`). A file that has a
# derived column but lacks one it follows from is refused: else the check that would tie it to `choice` is
# skipped, and the column the metrics read is whatever the file says (drop option_identities, then write any
# selected_identity or chose_left).
_CHOICE = ("options", "choice", "valid", "option_identities")
DERIVED_FROM: dict[str, tuple[str, ...]] = {
    "selected_identity": _CHOICE,
    "chose_left": (*_CHOICE, "identity_left", "identity_right", "template_id", "activity_left", "activity_right"),
    "correct": (*_CHOICE, "paradigm", "identity_left", "identity_right", "target_identity", "context"),
}


def missing_sources(names: Sequence[str]) -> list[str]:
    """One "column X: ..." line per derived column present whose sources are not all present."""
    have = set(names)
    out = []
    for derived, sources in DERIVED_FROM.items():
        lacking = [c for c in sources if c not in have]
        if derived in have and lacking:
            out.append(
                f"column {derived}: follows from {', '.join(lacking)}, which the file lacks (a derived column is "
                "checked against what it follows from, never trusted): write the runner's responses.parquet whole"
            )
    return out


def check_columns(columns: Mapping[str, Sequence[Any]], source: str) -> None:
    """Check a responses table given as {column: values} (Arrow's to_pydict, or a frame's columns).

    Raises `ResponsesError` listing (capped at MAX_PROBLEMS) every problem with its question id and column.
    """
    names = list(columns)
    lacking = missing_sources(names)
    if lacking:
        raise ResponsesError(source, lacking)
    n = len(columns[names[0]]) if names else 0
    problems: list[str] = []
    total = 0

    def note(text: str) -> None:
        nonlocal total
        total += 1
        if len(problems) < MAX_PROBLEMS:
            problems.append(text)

    ids = columns.get("question_id")
    if ids is not None:
        seen: dict[Any, int] = {}
        for i, q in enumerate(ids):
            if _null(q) or q == "":
                note(f"row {i}: question_id is empty")
            elif q in seen:
                note(f"question {q!r}: question_id answered twice (rows {seen[q]} and {i})")
            else:
                seen[q] = i
    for i in range(n):
        row = {c: columns[c][i] for c in names}
        for problem in row_problems(row):
            qid = row.get("question_id", f"row {i}")
            note(f"question {qid!r}: {problem}")
    if total:
        raise ResponsesError(source, problems, total)


def check_table(table: pa.Table, source: str) -> pa.Table:
    """`table` (a responses.parquet as read), after `check_columns`; raises `ResponsesError`."""
    wanted = [c for c in CHECKED_COLUMNS if c in table.column_names]
    check_columns(table.select(wanted).to_pydict(), source)
    return table


def check_frame(frame: Any, source: str) -> Any:
    """A pandas frame of responses, after `check_columns`; raises `ResponsesError`."""
    wanted = [c for c in CHECKED_COLUMNS if c in frame.columns]
    check_columns({c: frame[c].tolist() for c in wanted}, source)
    return frame


def read_responses(path: str | Path) -> Any:
    """The one reader of a responses.parquet: a pandas frame whose rows agree with themselves.

    Refuses (ResponsesError, naming file, question id and column) duplicated question ids, a valid
    row whose choice is not among its options, selected_identity/chose_left/correct that differ
    from what choice + options give, and probabilities that are not finite or do not sum to 1.
    """
    import pyarrow.parquet as pq

    path = Path(path)
    try:
        table = pq.ParquetFile(path).read(use_threads=False)
    except FileNotFoundError:
        raise ResponsesError(str(path), ["missing"]) from None
    except (OSError, pa.ArrowException) as e:
        raise ResponsesError(str(path), [f"not a readable parquet file ({type(e).__name__}: {e})"]) from None
    check_table(table, str(path))
    return table.to_pandas()


CHECKED_COLUMNS: tuple[str, ...] = (
    "question_id",
    "paradigm",
    "template_id",
    "context",
    "identity_left",
    "identity_right",
    "activity_left",
    "activity_right",
    "options",
    "option_identities",
    "choice",
    "selected_identity",
    "valid",
    "chose_left",
    "target_identity",
    "correct",
    "probabilities",
)


def markdown_table(fields: tuple[ResponseField, ...] = RESPONSE_FIELDS) -> str:
    """The column table of docs/FORMATS.md ("Responses"), exactly as it stands there."""
    lines = ["| column | type | required | meaning |", "|---|---|---|---|"]
    lines += [f"| `{f.name}` | `{f.type}` | {'yes' if f.required else 'no'} | {f.meaning} |" for f in fields]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # print the table (docs/FORMATS.md is generated: python -m vignette_bench.formats.docs)
    print(markdown_table(), end="")
