"""VIGNETTE in lmms-eval, end to end and offline: the real `lmms-eval eval` CLI (its own venv, `make lmms-venv`)
with the VIGNETTE task (`--include_path vignette_bench/lmms_eval_tasks`) and its `openai` backend, against this
project's chat-completions server (eval/serve/server.py, what `vignette serve` runs); then
`vignette import --format lmms-eval` of its `--log_samples` output, compared question by question with
`vignette run` over the same server and model.

The model is `OptionHashFixture`, a TEST FIXTURE, not part of the product: the untrained tiny VLM's replies are
never an option and the random responder has no free text (lmms-eval's openai backend sends no
response_format), so a deterministic answerer that names an option, or not, by a hash of the prompt and the
image's pixels stands in for a model. Any difference in the image, the prompt or the option order of a question
changes its answer.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

from tests import REPO_ROOT
from vignette_bench.dataset_builder.sample import build_sample
from vignette_bench.eval.adapters.base import (
    CHOICE_SYSTEM_PROMPT,
    ChoiceRequest,
    ChoiceResult,
    ModelAdapter,
    TextRequest,
    TextResult,
    match_option,
)
from vignette_bench.eval.runtime.run import run
from vignette_bench.eval.serve.server import ChatServer
from vignette_bench.lmms_eval_tasks import utils

LMMS_VENV = Path(os.environ.get("VIGNETTE_LMMS_VENV", REPO_ROOT / ".venv-lmms"))
LMMS_EVAL = LMMS_VENV / "bin" / "lmms-eval"
TASKS = REPO_ROOT / "vignette_bench" / "lmms_eval_tasks"
IDENTITIES = ("man", "woman", "muslim", "hindu", "old", "young")
ACTIVITIES = ("cooking", "driving", "teaching")
# vignette run's options and the task's VIGNETTE_* variables (utils.py) for the same questions: 1 pair,
# 2 paradigms, the image and the text-only form
SETTINGS = {"SAMPLE": "1", "SEED": "5", "SIZE": "96x48", "PARADIGMS": "factuality,decision",
            "VARIANTS": "modality=image,text"}  # fmt: skip
OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "WANDB_MODE": "disabled",  # lmms-eval imports wandb; it is never asked to log (no --wandb_args)
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "DO_NOT_TRACK": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
# lmms-eval's openai backend: structured=false because it sends no response_format (docs/lmms_eval.md)
ANSWER_COLUMNS = ("question_id", "pair_id", "options", "option_identities", "modality", "choice", "valid", "raw",
                  "error", "chose_left", "selected_identity", "correct", "key_left", "key_right", "seed")  # fmt: skip
OPTIONS_LINE = re.compile(r"Answer with exactly one of these options: (.*)\.$")


class OptionHashFixture(ModelAdapter):
    """TEST FIXTURE: names one of the options listed in the prompt, or none, by a hash of the prompt and the
    image's pixels; in one of three spellings the openai adapter accepts (bare, JSON, upper case + period)."""

    name = "option-hash-fixture"

    @staticmethod
    def reply(prompt: str, image: Image.Image | None) -> str:
        found = OPTIONS_LINE.search(prompt)
        if not found:  # the adapter's start-up probe, or anything else
            return "banana"
        options = found.group(1).split("; ")
        pixels = np.asarray(image.convert("RGB")).tobytes() if image is not None else b""
        h = int(hashlib.sha256(prompt.encode() + pixels).hexdigest()[:12], 16)
        k = h % (len(options) + 1)
        if k == len(options):
            return "I would rather not say."
        option = options[k]
        return (option, json.dumps({"choice": option}), option.upper() + ".")[(h >> 8) % 3]

    def generate_text(self, batch: list[TextRequest]) -> list[TextResult]:
        return [TextResult(r.question_id, self.reply(r.prompt, r.image)) for r in batch]

    def choose(self, batch: list[ChoiceRequest]) -> list[ChoiceResult]:
        out = []
        for r in batch:
            text = self.reply(r.prompt, r.image)
            choice = match_option(text, r.options)
            out.append(ChoiceResult(r.question_id, choice, text, valid=choice is not None))
        return out

    def provenance(self) -> dict[str, str]:
        return {"adapter": self.name, "model_id": self.name}


def _run(cmd: list[str], env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{cmd[:3]} exited {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    return done


def _vignette(*args: str) -> subprocess.CompletedProcess:
    return _run([sys.executable, "-m", "vignette_bench", *args], {**os.environ, **OFFLINE})


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(build_sample(tmp_path_factory.mktemp("src"), size=48, identities=IDENTITIES, activities=ACTIVITIES))


@pytest.mark.slow
@pytest.mark.skipif(
    not LMMS_EVAL.exists(), reason=f"no lmms-eval at {LMMS_EVAL}: `make lmms-venv` (or set VIGNETTE_LMMS_VENV)"
)
def test_lmms_eval_log_imports_to_the_answers_of_vignette_run(source: str, tmp_path: Path) -> None:
    logs, ran, imported = tmp_path / "logs", tmp_path / "run", tmp_path / "imported"
    with ChatServer(OptionHashFixture(), served_model="fixture") as server:
        lmms_env = {
            **{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")},
            **OFFLINE,
            **{f"VIGNETTE_{k}": v for k, v in SETTINGS.items()},
            "VIGNETTE_SOURCE": source,
            "OPENAI_API_KEY": "unused-by-a-local-server",
            "HF_HOME": str(tmp_path / "hf"),  # lmms-eval's dataset cache: the placeholder, nothing shared
            "PATH": f"{LMMS_EVAL.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        # fmt: off
        done = _run([str(LMMS_EVAL), "eval", "--model", "openai",
                     "--model_args", f"model=fixture,base_url={server.base_url},max_retries=1,num_concurrent=2",
                     "--tasks", "vignette_identity_contrast", "--include_path", str(TASKS),
                     "--batch_size", "1", "--log_samples", "--output_path", str(logs)], lmms_env)
        _vignette("run", "--source", source, "--config", "identity_contrast",
                  "--model", f"openai:fixture@{server.base_url}?structured=false&max_retries=1",
                  "--sample", SETTINGS["SAMPLE"], "--seed", SETTINGS["SEED"], "--size", SETTINGS["SIZE"],
                  "--paradigms", SETTINGS["PARADIGMS"], "--variants", SETTINGS["VARIANTS"],
                  "--out", str(ran), "--no-progress", "--max-invalid", "1")
        # fmt: on
    # lmms-eval exits 0 after an error in a task: its samples file is the proof that it ran
    assert list(logs.rglob("*_samples_vignette_identity_contrast.jsonl")), done.stdout[-3000:] + done.stderr[-6000:]
    _vignette("import", "--format", "lmms-eval", "--source", str(logs), "--out", str(imported))

    theirs = pq.read_table(imported / "responses.parquet").to_pylist()
    ours = pq.read_table(ran / "responses.parquet").to_pylist()
    assert 4 <= len(ours) <= 20
    assert [r["question_id"] for r in theirs] == [r["question_id"] for r in ours]  # same questions, same order
    for mine, run_row in zip(theirs, ours):
        for key in ANSWER_COLUMNS:
            assert mine[key] == run_row[key], (mine["question_id"], key, mine[key], run_row[key])
    # the fixture answered both ways and both forms were asked: the comparison saw valid and invalid answers
    assert {r["valid"] for r in ours} == {True, False}
    assert {r["modality"] for r in ours} == {"image", "text"}
    assert {r["model_id"] for r in theirs} == {"lmms-eval/openai/fixture"}
    record = json.loads((imported / "run.json").read_text())
    assert record["imported"]["format"] == "lmms-eval"
    # the provenance the task logged: the same settings and dataset record (source, selection, index digest)
    ran_record = json.loads((ran / "run.json").read_text())
    assert record["dataset"] == ran_record["dataset"] and record["dataset"]["index_sha256"]
    assert {**record["settings"], "model": ""} == {**ran_record["settings"], "model": ""}
    assert _vignette("report", str(imported), "--out", str(tmp_path / "report"), "--figures", "none")


def test_task_docs_are_the_questions_of_vignette_run(source: str, tmp_path: Path, monkeypatch) -> None:
    """Without lmms-eval: the docs the task hands it, their messages and the reading of replies."""
    for key, value in {**SETTINGS, "SOURCE": source}.items():
        monkeypatch.setenv(f"VIGNETTE_{key}", value)
    docs = utils.docs("identity_contrast")
    settings = utils.settings("identity_contrast").model_copy(update={"model": "random"})
    responses = pq.read_table(run(settings, tmp_path / "run", progress=False).responses).to_pylist()  # type: ignore[arg-type]
    assert [d["question_id"] for d in docs] == [r["question_id"] for r in responses]
    assert [d["options"] for d in docs] == [r["options"] for r in responses]
    image_doc = next(d for d in docs if d["modality"] == "image")
    text_doc = next(d for d in docs if d["modality"] == "text")
    system, user = utils.doc_to_messages(image_doc)
    assert system["content"] == [{"type": "text", "text": CHOICE_SYSTEM_PROMPT}]
    assert user["content"][0]["url"].size == (96, 48) and user["content"][1]["text"] == image_doc["prompt"]
    assert [part["type"] for part in utils.doc_to_messages(text_doc)[1]["content"]] == ["text"]
    option = image_doc["options"][1]
    for reply in (option, json.dumps({"choice": option}), option.upper() + "."):
        row = utils.process_results(image_doc, [reply])["vignette_response"]["row"]
        assert row["choice"] == option and row["valid"] and row["raw"] == reply
    row = utils.process_results(image_doc, [f"I think {option}"])["vignette_response"]["row"]
    assert row["choice"] is None and not row["valid"] and row["error"] == "answer is not one of the options"


def test_task_settings_errors_name_the_variable(source: str, monkeypatch) -> None:
    monkeypatch.delenv("VIGNETTE_SOURCE", raising=False)
    with pytest.raises(utils.SettingsError, match="VIGNETTE_SOURCE is not set"):
        utils.settings("identity_contrast")
    monkeypatch.setenv("VIGNETTE_SOURCE", source)
    monkeypatch.setenv("VIGNETTE_SAMPLE", "lots")
    with pytest.raises(utils.SettingsError, match=r"VIGNETTE_\* settings cannot be read"):
        utils.settings("identity_contrast")
    monkeypatch.setenv("VIGNETTE_SAMPLE", "1")
    monkeypatch.setenv("VIGNETTE_PARADIGMS", "factuality")
    with pytest.raises(utils.SettingsError, match="portraits: no questions"):
        utils.process_portraits(None)


def test_a_log_of_another_task_is_named_and_nothing_written(tmp_path: Path) -> None:
    logs = tmp_path / "logs" / "model"
    logs.mkdir(parents=True)
    (logs / "20260101_samples_mme.jsonl").write_text(json.dumps({"doc_id": 0, "doc": {}, "resps": [["A"]]}) + "\n")
    (logs / "20260101_results.json").write_text("{}")
    out = tmp_path / "imported"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "vignette_bench",
            "import",
            "--format",
            "lmms-eval",
            "--source",
            str(tmp_path / "logs"),
            "--out",
            str(out),
        ],  # fmt: skip
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2, done.stderr
    assert "model/20260101_samples_mme.jsonl: row 1: vignette_response: missing" in done.stderr
    assert "Traceback" not in done.stderr and not out.exists()


def test_logs_of_several_settings_are_one_problem(source: str, monkeypatch) -> None:
    """Answers logged with other settings or another source are not merged under one run's provenance."""
    from vignette_bench.eval.importing.core import Problems
    from vignette_bench.eval.importing.lmms_eval_log import provenance

    for key, value in {**SETTINGS, "SOURCE": source}.items():
        monkeypatch.setenv(f"VIGNETTE_{key}", value)
    doc = utils.docs("identity_contrast")[0]
    one = (doc["vignette_settings"], doc["vignette_dataset"])
    problems = Problems()
    settings, dataset = provenance({one}, "m", problems)
    assert not problems.items and settings.seed == 5 and settings.model == "m" and dataset.index_sha256
    other_seed = json.dumps({**json.loads(one[0]), "seed": 6})
    assert provenance({one, (other_seed, one[1])}, "m", problems) == (None, None)
    assert problems.items == [
        "logs: vignette_response: the logs ask about several sources, image sets or settings: import each separately"
    ]
