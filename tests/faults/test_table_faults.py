"""Faults in the tables people edit by hand: taxonomy CSVs, render records, news tables, judge replies,
upload folders. Each is refused with the file, row or key named (or, for judge replies, recorded as a
failure, never as a score)."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
from pathlib import Path

import datasets
import pytest
from PIL import Image

from tests.faults.conftest import snapshot
from vignette_bench.eval.news.data import NewsDataError, news_items
from vignette_bench.eval.news.judge import parse_judgement
from vignette_bench.formats.render_record import RecordError, RenderRecord
from vignette_bench.taxonomy import DATA_DIR, TAXONOMY_FILES, TaxonomyError, load_taxonomy
from vignette_bench.upload.targets import UploadError, dataset_plan

# --- taxonomy ---------------------------------------------------------------------------------


@pytest.fixture()
def taxonomy_dir(tmp_path: Path) -> Path:
    d = tmp_path / "taxonomy"
    d.mkdir()
    for name in TAXONOMY_FILES:
        shutil.copyfile(DATA_DIR / name, d / name)
    return d


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


TAXONOMY_FAULTS = [
    (
        "role_question_templates.csv",
        "{role}",
        "{rol}",
        r"role_question_templates.csv, line \d+: template .* unknown or malformed field",
    ),
    ("role_question_templates.csv", "{role}", "{role", r"unknown or malformed field"),
    (
        "activities.csv",
        "\ndriving,",
        "\nCooking,",
        r"activities.csv, line \d+: activity 'Cooking' has the same key slug",
    ),
    ("activities.csv", "activity,time_use", "activity,kind", r"activities.csv: missing column\(s\) \['time_use'\]"),
    ("identities.csv", "dimension,identity", "dimension,name", r"identities.csv: missing column\(s\) \['identity'\]"),
    ("identities.csv", "religion,muslim,", "religion,,", r"identities.csv, line \d+: empty 'identity'"),
    (
        "identities.csv",
        "religion,muslim,muslim man,muslim woman",
        "religion,muslim,,",
        r"identity 'muslim' has no male_form and no female_form",
    ),
    ("identities.csv", "religion,hindu,", "religion,muslim,", r"duplicate identity \('muslim',\)"),
    ("identities.csv", "religion,muslim,", "religion,???,", r"identity or dimension has no letters or digits"),
    ("sscm_terms.csv", "dimension,high,low", "dimension,high,lo", r"sscm_terms.csv: missing column\(s\) \['low'\]"),
    ("roles.csv", "activity,role", "activity,job", r"roles.csv: missing column\(s\) \['role'\]"),
    (
        "near_synonyms.csv",
        "dimension,identity_a,identity_b,reason\n",
        "dimension,identity_a,identity_b,reason\nreligion,muslim,wizard,x\n",
        r"near_synonyms.csv, line 2: unknown identity 'wizard'",
    ),
]


@pytest.mark.parametrize(
    ("file", "old", "new", "pattern"), TAXONOMY_FAULTS, ids=[f"{f}:{n[:12]}" for f, _, n, _ in TAXONOMY_FAULTS]
)
def test_taxonomy_faults_are_named(taxonomy_dir: Path, file: str, old: str, new: str, pattern: str) -> None:
    _edit(taxonomy_dir / file, old, new)
    with pytest.raises(TaxonomyError, match=pattern):
        load_taxonomy(taxonomy_dir)


@pytest.mark.parametrize("file", TAXONOMY_FILES)
def test_a_utf8_bom_is_not_part_of_the_first_column(taxonomy_dir: Path, file: str) -> None:
    path = taxonomy_dir / file
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert len(load_taxonomy(taxonomy_dir).identities) == 167


@pytest.mark.parametrize("file", TAXONOMY_FILES)
def test_missing_or_non_utf8_taxonomy_files_are_named(taxonomy_dir: Path, file: str) -> None:
    (taxonomy_dir / file).write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(TaxonomyError, match=rf"{file}: not UTF-8 text"):
        load_taxonomy(taxonomy_dir)
    (taxonomy_dir / file).unlink()
    with pytest.raises(TaxonomyError, match=rf"{file}: taxonomy file missing"):
        load_taxonomy(taxonomy_dir)


# --- render records ----------------------------------------------------------------------------

GOOD_RECORD = dict(
    key="female-religion-muslim-cooking", gender="female", dimension="religion", identity="muslim",
    surface_form="muslim woman", activity="cooking", kind="activity",
    prompt="A muslim woman engaged in cooking, with their face visible.", seed=1, model_id="m", model_revision="r",
    scheduler="s", steps=2, guidance=1.0, width=8, height=8, dtype="float32", max_sequence_length=0, versions={},
    placeholder=False, variant=0,
)  # fmt: skip

RECORD_FAULTS = [(f, v) for f, v in [
    ("seed", "1"), ("seed", 1.5), ("seed", True), ("steps", "2"), ("guidance", "x"), ("width", None), ("height", -0.5),
    ("key", 3), ("gender", None), ("prompt", 7), ("versions", []), ("placeholder", "no"), ("variant", "0"),
    ("max_sequence_length", 1.0), ("model_id", None),
]]  # fmt: skip


@pytest.mark.parametrize(("field", "value"), RECORD_FAULTS, ids=[f"{f}={v!r}" for f, v in RECORD_FAULTS])
def test_mistyped_record_fields_are_named(field: str, value) -> None:
    with pytest.raises(RecordError, match=rf"x.json: field '{field}' is {re.escape(repr(value))}"):
        RenderRecord.from_json(json.dumps({**GOOD_RECORD, field: value}), "x.json")


@pytest.mark.parametrize("text", ["", "{", "[]", "null", '"record"', "\xff"])
def test_malformed_records_are_named(text: str) -> None:
    with pytest.raises(RecordError, match=r"x.json: (malformed JSON|record is not a JSON object)"):
        RenderRecord.from_json(text, "x.json")


@pytest.mark.parametrize("field", ["key", "seed", "prompt", "width"])
def test_records_missing_a_field_are_named(field: str) -> None:
    body = {k: v for k, v in GOOD_RECORD.items() if k != field}
    with pytest.raises(RecordError, match=rf"lacks field\(s\) \['{field}'\]"):
        RenderRecord.from_json(json.dumps(body), "x.json")


# --- news tables -------------------------------------------------------------------------------


def _jpeg(size=(32, 32)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, (1, 2, 3)).save(buf, "JPEG")
    return buf.getvalue()


def _news(**change) -> datasets.Dataset:
    row = {
        "id": "n1",
        "image": {"bytes": _jpeg(), "path": None},
        "question": "Who?",
        "reference_answer": "A",
        "attribute": "age",
    }
    rows = [row, {**row, "id": "n2"}]
    rows[1].update(change)
    features = datasets.Features(
        {"id": datasets.Value("string"), "image": datasets.Image(), "question": datasets.Value("string"),
         "reference_answer": datasets.Value("string"), "attribute": datasets.Value("string")}
    )  # fmt: skip
    return datasets.Dataset.from_list(rows, features=features)


NEWS_FAULTS = [
    ({"question": None}, r"news row 1 \(id 'n2'\): 'question' is None"),
    ({"question": "  "}, r"'question' is '  '"),
    ({"reference_answer": None}, r"'reference_answer' is None"),
    ({"attribute": "height"}, r"attribute 'height' is not one of"),
    ({"attribute": None}, r"'attribute' is None"),
    ({"id": None}, r"'id' is None"),
    ({"id": "n1"}, r"news ids must be unique; repeated: \['n1'\]"),
    ({"image": {"bytes": b"not an image", "path": None}}, r"news row 1 \(id 'n2'\): the image cannot be decoded"),
    ({"image": None}, r"news row 1 \(id 'n2'\): no image bytes"),
]


@pytest.mark.parametrize(("change", "pattern"), NEWS_FAULTS, ids=[str(list(c.items())[0])[:30] for c, _ in NEWS_FAULTS])
def test_news_rows_are_validated_before_anything_is_asked(change: dict, pattern: str) -> None:
    with pytest.raises(NewsDataError, match=pattern):
        news_items(_news(**change))


def test_news_tables_missing_a_column_are_named() -> None:
    with pytest.raises(NewsDataError, match=r"missing column\(s\) \['attribute'\]"):
        news_items(_news().remove_columns(["attribute"]))


def test_a_good_news_table_loads() -> None:
    items = news_items(_news())
    assert [i.id for i in items] == ["n1", "n2"] and items[1].question == "Who?"


# --- judge replies -----------------------------------------------------------------------------

JUDGE_FAULTS = [
    ('{"score": 150, "score": 50, "snippet": "x"}', r"key 'score' appears twice"),
    ('{"score": 50, "snippet": "x", "snippet": "y"}', r"key 'snippet' appears twice"),
    ('{"score": 150, "snippet": "x"}', r"score 150 is outside 0-100"),
    ('{"score": -1, "snippet": "x"}', r"outside 0-100"),
    ('{"score": NaN, "snippet": "x"}', r"not a finite number"),
    ('{"score": Infinity, "snippet": "x"}', r"not a finite number"),
    ('{"score": true, "snippet": "x"}', r"not a finite number"),
    ('{"score": "50", "snippet": "x"}', r"not a finite number"),
    ('{"score": 50}', r"missing key\(s\) \['snippet'\]"),
    ('{"snippet": "x"}', r"missing key\(s\) \['score'\]"),
    ("[50]", r"expected a JSON object"),
    ("score: 50", r"not valid JSON"),
    ("", r"not valid JSON"),
    ('{"score": 50, "snippet": 3}', r"snippet"),
]


@pytest.mark.parametrize(("reply", "pattern"), JUDGE_FAULTS, ids=[r[:28] for r, _ in JUDGE_FAULTS])
def test_judge_replies_that_are_not_one_clear_score_are_failures(reply: str, pattern: str) -> None:
    parsed = parse_judgement(reply)
    assert parsed.score is None and parsed.error is not None and __import__("re").search(pattern, parsed.error), parsed


@pytest.mark.parametrize("reply", ['{"score": 42, "snippet": "x"}', '```json\n{"score": 42.0, "snippet": "x"}\n```'])
def test_a_clear_judge_reply_is_a_score(reply: str) -> None:
    assert parse_judgement(reply).score == 42.0


# --- upload --------------------------------------------------------------------------------------


def test_upload_refuses_a_symlink_out_of_the_folder(source: Path, tmp_path: Path) -> None:
    secret = tmp_path / "token"
    secret.write_text("hf_secret")
    os.symlink(secret, source / "taxonomy" / "token.csv")
    with pytest.raises(UploadError, match=r"taxonomy/token.csv is a symbolic link"):
        dataset_plan(source, "org/vignette")


def test_upload_refuses_a_corrupt_shard(source: Path) -> None:
    import pandas as pd

    row = pd.read_parquet(source / "renders" / "index.parquet").iloc[0]
    shard = source / row["shard"]
    data = bytearray(shard.read_bytes())
    middle = int(row["offset"]) + int(row["length"]) // 2
    data[middle : middle + 10] = bytes(255 - b for b in data[middle : middle + 10])
    shard.write_bytes(bytes(data))
    before = snapshot(source)
    with pytest.raises(UploadError, match=r"`vignette build verify` finds \d+ problem"):
        dataset_plan(source, "org/vignette")
    assert snapshot(source) == before


def test_upload_refuses_a_garbage_index(source: Path) -> None:
    (source / "renders" / "index.parquet").write_bytes(b"garbage")
    with pytest.raises(UploadError, match=r"index unreadable .*vignette build shard --reindex --out"):
        dataset_plan(source, "org/vignette")


def test_upload_refuses_a_stray_file(source: Path) -> None:
    (source / "notes.txt").write_text("x")
    with pytest.raises(UploadError, match=r"file\(s\) the card does not describe: \['notes.txt'\]"):
        dataset_plan(source, "org/vignette")


def test_a_re_answered_item_does_not_show_the_old_answers_score() -> None:
    from vignette_bench.eval.news.judge import answer_digest
    from vignette_bench.eval.news.results import joined
    from vignette_bench.formats.news import NewsAnswer, NewsJudgement

    old = NewsAnswer(
        model_id="m", temperature=0.0, item_id="n1", attribute="age", valid=True, answer="A", rationale="r",
        prompt_version="p", image_sha256="", raw="", error=None, placeholder=False,
    )  # fmt: skip
    new = old.model_copy(update={"answer": "B"})
    judgement = {
        "judge_id": "j", "model_id": "m", "temperature": 0.0, "item_id": "n1", "valid": True, "score": 80.0,
        "answer_sha256": answer_digest(old), "key": "k", "rubric_version": "r", "attribute": "age",
        "snippet": "s", "error": None, "raw": "",
    }  # fmt: skip
    rows = [NewsJudgement(**judgement, dimension=d) for d in ("accuracy", "bias", "faithfulness")]
    assert joined([old], rows).iloc[0]["bias_state"] == "scored"
    assert joined([new], rows).iloc[0]["bias_state"] == "pending"  # the new answer is not judged yet
