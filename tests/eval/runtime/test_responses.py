"""The response row has one definition: the Arrow schema, the questions' rows and docs/FORMATS.md follow it."""

import re

import pyarrow as pa

from tests import REPO_ROOT
from vignette_bench.eval.adapters.base import ChoiceResult
from vignette_bench.eval.runtime.questions import QuestionBuilder, Variants
from vignette_bench.formats.responses import RESPONSE_COLUMNS, RESPONSE_FIELDS, RESPONSE_SCHEMA, markdown_table
from vignette_bench.taxonomy import load_taxonomy

BEGIN, END = "<!-- responses-table: begin (generated) -->\n", "<!-- responses-table: end -->"


def test_docs_table_is_the_generated_one():
    text = (REPO_ROOT / "docs" / "FORMATS.md").read_text()
    documented = text[text.index(BEGIN) + len(BEGIN) : text.index(END)]
    assert documented == markdown_table()
    # every column appears once, in schema order
    assert re.findall(r"^\| `([a-z_]+)` \|", documented, flags=re.M) == list(RESPONSE_COLUMNS)


def test_schema_is_the_one_merge_has_always_written():
    # the columns and types merge wrote before the field list existed, then the API/score provenance columns
    # appended at the end (issue 15); older files read with them null (with_response_columns)
    s, ss = pa.string(), pa.list_(pa.string())
    assert RESPONSE_SCHEMA == pa.schema(
        [
            ("question_id", s),
            ("pair_id", s),
            ("config", s),
            ("gender", s),
            ("dimension", s),
            ("paradigm", s),
            ("subtask", s),
            ("template_id", s),
            ("paraphrase", pa.int64()),
            ("option_style", s),
            ("modality", s),
            ("context", s),
            ("identity_left", s),
            ("identity_right", s),
            ("activity_left", s),
            ("activity_right", s),
            ("key_left", s),
            ("key_right", s),
            ("options", ss),
            ("option_identities", ss),
            ("choice", s),
            ("selected_identity", s),
            ("candidates", ss),
            ("probabilities", pa.list_(pa.float64())),
            ("valid", pa.bool_()),
            ("raw", s),
            ("error", s),
            ("direction", s),
            ("trait_dimension", s),
            ("chose_left", pa.bool_()),
            ("target_identity", s),
            ("correct", pa.bool_()),
            ("seed", pa.int64()),
            ("model_id", s),
            ("option_logprobs", pa.list_(pa.float64())),
            ("attempts", pa.int64()),
            ("server_model", s),
        ]
    )
    assert [f.name for f in RESPONSE_FIELDS] == list(RESPONSE_COLUMNS) == RESPONSE_SCHEMA.names


def test_question_rows_have_exactly_the_schema_columns():
    """A key the schema lacks would be dropped by merge without a word; a missing one would read as null."""
    row = {
        "pair_id": "identity_contrast/female/religion/muslim+hindu/cooking+cooking/L0",
        "config": "identity_contrast",
        "gender": "female",
        "dimension": "religion",
        "identity_left": "muslim",
        "identity_right": "hindu",
        "form_left": "muslim woman",
        "form_right": "hindu woman",
        "activity_left": "cooking",
        "activity_right": "cooking",
        "key_left": "female-muslim-cooking",
        "key_right": "female-hindu-cooking",
    }
    questions = QuestionBuilder(load_taxonomy(), 0, ("factuality", "perception", "decision"), Variants.all())(row)
    assert {q.paradigm for q in questions} == {"factuality", "perception", "decision"}
    for q in questions[:: max(1, len(questions) // 20)]:
        answer = q.response(ChoiceResult(q.question_id, q.options[0], raw=q.options[0]), "m")
        assert tuple(answer) == RESPONSE_COLUMNS
        # every value fits its column's type
        assert pa.Table.from_pylist([answer], schema=RESPONSE_SCHEMA).to_pylist() == [answer]


def test_an_older_run_without_render_keys_reads_them_as_null(tmp_path):
    """Responses written before key_left/key_right existed: the columns read back as nulls, in schema order."""
    from vignette_bench.eval.runtime.folder import RunFolder
    from vignette_bench.formats.responses import with_response_columns

    old_schema = pa.schema([f for f in RESPONSE_SCHEMA if f.name not in ("key_left", "key_right")])
    row = {f.name: None for f in old_schema} | {"question_id": "q1", "pair_id": "p", "valid": True}
    folder = RunFolder(tmp_path)
    folder.responses.write(pa.Table.from_pylist([row], schema=old_schema))
    table = folder.responses.read()
    assert table.schema == RESPONSE_SCHEMA and table.column("key_left").to_pylist() == [None]
    assert folder.responses.read(columns=["key_right", "pair_id"]).to_pylist() == [{"key_right": None, "pair_id": "p"}]
    # a log line of that time (no keys) merges as null too: merge builds the table with the schema
    assert pa.Table.from_pylist([row], schema=RESPONSE_SCHEMA).column("key_right").null_count == 1
    extra = pa.table({"question_id": ["q"], "attn_left_share": [0.5]})
    assert with_response_columns(extra).column_names[-1] == "attn_left_share"
