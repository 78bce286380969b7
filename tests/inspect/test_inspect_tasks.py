"""VIGNETTE as an inspect_ai task, offline: the placeholder source, inspect's built-in `mockllm/model` and a
model API registered here that always answers the left person. The log's samples carry the question's
metadata and the parsed answers, and give the same responses as `vignette run --model always-left`."""

from __future__ import annotations

from typing import Any

import pyarrow.parquet as pq
import pytest

pytest.importorskip("inspect_ai")

from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.log import read_eval_log  # noqa: E402
from inspect_ai.log._samples import sample_active  # noqa: E402
from inspect_ai.model import GenerateConfig, ModelAPI, ModelOutput, ModelUsage, modelapi  # noqa: E402

from vignette_bench.dataset_builder.sample import build_sample  # noqa: E402
from vignette_bench.eval.runtime.questions import Variants  # noqa: E402
from vignette_bench.eval.runtime.run import RunSettings, run  # noqa: E402
from vignette_bench.inspect_tasks import QUESTION_FIELDS, identity_contrast, portraits  # noqa: E402

IDENTITIES = ("man", "woman", "muslim", "hindu", "old", "young")
ACTIVITIES = ("cooking", "driving", "teaching")
USAGE = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # set: mockllm would count with tiktoken (online)


def _output(text: str) -> ModelOutput:
    output = ModelOutput.from_content(model="mock", content=text)
    output.usage = USAGE
    return output


@modelapi(name="vignette_rule")
class LeftPerson(ModelAPI):
    """A rule-based answerer: the option naming the left person (the sample's metadata says which), else nothing."""

    def __init__(self, model_name: str, base_url: str | None = None, api_key: str | None = None,
                 config: GenerateConfig = GenerateConfig(), **model_args: Any) -> None:  # fmt: skip  # noqa: B008
        super().__init__(model_name, base_url, api_key, [], config)

    async def generate(self, input: Any, tools: Any, tool_choice: Any, config: GenerateConfig) -> ModelOutput:
        active = sample_active()
        assert active is not None
        meta = active.sample.metadata or {}
        sides = list(meta["option_sides"])
        return _output(meta["options"][sides.index("left")] if "left" in sides else "")


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(build_sample(tmp_path_factory.mktemp("src"), size=48, identities=IDENTITIES, activities=ACTIVITIES))


ARGS = {"sample": 3, "seed": 5, "size": "96x48", "variants": "paraphrase=0,1 option_style=identity,position"}


def test_samples_carry_the_question_and_the_run_wording(source: str) -> None:
    task = identity_contrast(source=source, **ARGS)
    samples = list(task.dataset)
    assert samples and len({s.id for s in samples}) == len(samples)
    for s in samples:
        meta = s.metadata or {}
        assert set(QUESTION_FIELDS) <= set(meta) and meta["run_seed"] == 5
        assert s.id == meta["question_id"] and s.choices is not None
        assert list(s.choices) == meta["options"]
        content = s.input[0].content  # type: ignore[index, union-attr]
        assert content[0].type == "image" and content[0].image.startswith("data:image/png;base64,")
        assert content[1].text.endswith("Answer with exactly one of these options: " + "; ".join(meta["options"]) + ".")
    assert task.metadata and task.metadata["vignette_settings"]["config"] == "identity_contrast"
    assert {s.metadata["paradigm"] for s in samples} == {"factuality", "perception", "decision"}  # type: ignore[index]


def test_builtin_mockllm_answers_are_parsed_against_the_options(source: str, tmp_path) -> None:
    """inspect's own mockllm/model: its default text is no option (invalid); an exact option is valid."""
    task = portraits(source=source, sample=2, seed=5, size="96x48")
    replies = iter(["Default output from mockllm/model", "THE MAN.", *["no idea"] * 10_000])

    def reply(input: Any, tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        text = next(replies)
        if text == "THE MAN.":  # the first option of the sample being asked, shouted with a period
            meta = sample_active().sample.metadata  # type: ignore[union-attr]
            text = meta["options"][0].upper() + "."
        return _output(text)

    (log,) = inspect_eval(task, model="mockllm/model", model_args={"custom_outputs": reply},
                          log_dir=str(tmp_path), display="none", max_connections=1, max_samples=1)  # fmt: skip
    assert log.status == "success", log.error
    samples = read_eval_log(log.location).samples or []
    assert len(samples) == len(task.dataset)
    scored = [s.scores["vignette_choice"] for s in samples]  # type: ignore[index]
    assert sum(sc.metadata["valid"] for sc in scored) == 1  # type: ignore[index]
    ok = next(sc for sc in scored if sc.metadata["valid"])  # type: ignore[index]
    assert ok.answer in ok.metadata["response"]["options"]  # type: ignore[index]
    bad = next(s for s in samples if s.output.completion.startswith("Default output"))
    assert bad.scores["vignette_choice"].metadata["error"] == "answer is not one of the options"  # type: ignore[index]


def test_left_rule_gives_the_responses_of_vignette_run_always_left(source: str, tmp_path) -> None:
    task = identity_contrast(source=source, **ARGS)
    (log,) = inspect_eval(task, model="vignette_rule/left", log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success", log.error
    log = read_eval_log(log.location)
    metrics = log.results.scores[0].metrics  # type: ignore[union-attr]
    assert metrics["left_share"].value == 1.0
    rows = {}
    for s in log.samples or []:
        score = s.scores["vignette_choice"]  # type: ignore[index]
        meta = s.metadata
        assert meta["pair_id"] and meta["identity_left"] and meta["options"]
        rows[s.id] = score.metadata["response"]  # type: ignore[index]
        if "left" in meta["option_sides"]:
            left = meta["options"][meta["option_sides"].index("left")]
            assert score.metadata["chose_left"] is True and score.answer == left  # type: ignore[index]

    settings = RunSettings(source=source, config="identity_contrast", model="always-left", seed=5, sample=3,
                           image_size=(96, 48), variants=Variants.parse(ARGS["variants"].split()))  # fmt: skip
    result = run(settings, tmp_path / "run", progress=False)
    responses = pq.read_table(result.responses).to_pylist()  # type: ignore[arg-type]
    assert {r["question_id"] for r in responses} == set(rows)
    for r in responses:
        mine = rows[r["question_id"]]
        for key in ("pair_id", "options", "option_identities", "identity_left", "identity_right", "paradigm",
                    "subtask", "context", "choice", "valid", "chose_left", "selected_identity", "key_left", "seed"):  # fmt: skip
            assert mine[key] == r[key], (key, mine[key], r[key])


def test_an_inspect_log_imports_as_the_run_vignette_run_writes(source: str, tmp_path) -> None:
    """`vignette import --format inspect` of the task's log: the same responses as `vignette run`, and report runs."""
    from vignette_bench.cli import main as vignette
    from vignette_bench.formats.responses import read_responses
    from vignette_bench.formats.run_record import RunRecord

    task = identity_contrast(source=source, **ARGS)
    (log,) = inspect_eval(task, model="vignette_rule/left", log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success", log.error
    out = tmp_path / "imported"
    assert vignette(["import", "--format", "inspect", "--source", str(tmp_path / "logs"), "--out", str(out)]) == 0
    imported = read_responses(out / "responses.parquet")
    record = RunRecord.from_json((out / "run.json").read_text(), "run.json")
    assert record.imported is not None and record.imported.format == "inspect"
    assert set(imported["model_id"]) == {"vignette_rule/left"}
    settings = RunSettings(source=source, config="identity_contrast", model="always-left", seed=5, sample=3,
                           image_size=(96, 48), variants=Variants.parse(ARGS["variants"].split()))  # fmt: skip
    result = run(settings, tmp_path / "run", progress=False)
    ran = {r["question_id"]: r for r in pq.read_table(result.responses).to_pylist()}  # type: ignore[arg-type]
    assert set(imported["question_id"]) == set(ran)
    for r in imported.to_dict("records"):
        mine = {k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}  # pandas NaN -> None
        theirs = ran[r["question_id"]]
        for key in ("pair_id", "identity_left", "identity_right", "choice", "valid", "chose_left", "selected_identity",
                    "key_left", "paradigm", "subtask", "context"):  # fmt: skip
            assert mine[key] == theirs[key], (key, mine[key], theirs[key])
        assert list(mine["options"]) == list(theirs["options"])
    assert vignette(["report", str(out), "--out", str(tmp_path / "report"), "--figures", "none"]) == 0
    # a log of something else is named, and nothing is written
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert vignette(["import", "--format", "inspect", "--source", str(bad), "--out", str(tmp_path / "x")]) == 2
    assert not (tmp_path / "x").exists()
