"""News answering and judging over real HTTP, success and failure paths, and resume.

The backend behind the test server is `SchemaFixtureAdapter` (a TEST FIXTURE: deterministic,
schema-valid replies) or an interceptor that injects the bad replies a real judge can give.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.eval.serve.test_server import SchemaFixtureAdapter
from vignette_bench.dataset_builder.news import build_news_sample
from vignette_bench.eval.adapters.openai_adapter import OpenAIAdapter
from vignette_bench.eval.news.answer import ANSWERS_FILE, answer_news
from vignette_bench.eval.news.data import load_news, news_items
from vignette_bench.eval.news.judge import DIMENSIONS, judge_answers
from vignette_bench.eval.news.results import joined, summarise, write_results
from vignette_bench.eval.news.schemas import ANSWER_MAX_NEW_TOKENS
from vignette_bench.eval.serve.server import ChatServer, Intercept
from vignette_bench.formats.news import NewsAnswer, read_answers, read_judgements

FAST = {"max_retries": 1, "backoff_base_s": 0.01}


@pytest.fixture(scope="module")
def items(tmp_path_factory: pytest.TempPathFactory) -> list:
    source = tmp_path_factory.mktemp("news") / "src"
    build_news_sample(source)
    return news_items(load_news(source))


def _client(server: ChatServer, name: str = "served") -> OpenAIAdapter:
    return OpenAIAdapter(name, base_url=server.base_url, api_key="test", **FAST)


def _reply(content: str) -> Intercept:
    return Intercept(
        200,
        json.dumps(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [
                    {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
                ],
            }
        ),
    )


def test_answers_are_json_and_resume(items: list, tmp_path: Path) -> None:
    backend = SchemaFixtureAdapter()
    with ChatServer(backend) as server:
        counts = answer_news(items, _client(server), tmp_path / "run", batch_size=3)
        assert counts == {"asked": 10, "valid": 10, "invalid": 0, "skipped": 0}
        again = answer_news(items, _client(server), tmp_path / "run")
        assert again["asked"] == 0 and again["skipped"] == 10
        with pytest.raises(ValueError, match="temperature"):
            answer_news(items, _client(server), tmp_path / "run", temperature=0.2)
    rows = read_answers(tmp_path / "run" / ANSWERS_FILE)
    assert {r.answer for r in rows} == {"fixture answer"} and all(r.placeholder for r in rows)
    sent = next(r for r in backend.seen if items[0].question in r.prompt)  # requests run concurrently
    assert sent.json_schema["required"] == ["answer", "rationale"] and sent.max_new_tokens == ANSWER_MAX_NEW_TOKENS
    assert all("maxLength" in p for p in sent.json_schema["properties"].values())  # bounded: always finishes
    assert sent.temperature == 0.0 and sent.image is not None


def test_unparseable_answers_are_kept_marked_and_retried(items: list, tmp_path: Path) -> None:
    with ChatServer(SchemaFixtureAdapter(), interceptor=lambda body: _reply("The manager is the man.")) as server:
        counts = answer_news(items[:3], _client(server), tmp_path / "run")
    assert counts["invalid"] == 3
    rows = read_answers(tmp_path / "run" / ANSWERS_FILE)
    assert all(not r.valid and r.raw == "The manager is the man." and "not valid JSON" in r.error for r in rows)
    with ChatServer(SchemaFixtureAdapter()) as server:
        assert answer_news(items[:3], _client(server), tmp_path / "run", retry_invalid=True)["valid"] == 3
    assert all(r.valid for r in read_answers(tmp_path / "run" / ANSWERS_FILE))


def _answers(items: list, tmp_path: Path, n: int = 10, bad: int = 0) -> list[NewsAnswer]:
    with ChatServer(SchemaFixtureAdapter()) as server:
        answer_news(items[bad:n], _client(server), tmp_path / "run")
    if bad:
        with ChatServer(SchemaFixtureAdapter(), interceptor=lambda body: _reply("no json")) as server:
            answer_news(items[:bad], _client(server), tmp_path / "run")
    return read_answers(tmp_path / "run" / ANSWERS_FILE)


def test_judge_success_path_scores_cache_and_results(items: list, tmp_path: Path) -> None:
    answers = _answers(items, tmp_path, bad=2)
    backend = SchemaFixtureAdapter()
    out = tmp_path / "judgements.jsonl"
    with ChatServer(backend) as server:
        counts = judge_answers(items, answers, _client(server, "judge-a"), out)
        assert counts["judged"] == 8 * 3 and counts["failed"] == 0 and counts["skipped_invalid_answers"] == 2
        assert judge_answers(items, answers, _client(server, "judge-a"), out)["judged"] == 0  # cached
    rows = read_judgements(out)
    assert len(rows) == 24 and all(0 <= r.score <= 100 for r in rows)
    prompts = [r.prompt for r in backend.seen]
    assert any("SOCIAL BIAS" in p for p in prompts) and any("FAITHFULNESS" in p for p in prompts)
    assert all(items[0].reference_answer in p for p in prompts if items[0].question in p)
    assert all(r.image is not None and r.temperature == 0.0 for r in backend.seen)

    summary = summarise(joined(answers, rows))
    overall = summary[summary.attribute == "overall"].iloc[0]
    expected = [r.score for r in rows if r.dimension == "bias"]
    assert overall.bias_mean == pytest.approx(sum(expected) / len(expected))
    assert overall.n_items == 10 and overall.answer_failed == 2 and overall.n_judged == 8 and overall.judge_failed == 0
    assert set(summary.attribute) == {"overall", "age", "gender", "race", "occupation", "sport"}

    # A second judge for the agreement table.
    with ChatServer(SchemaFixtureAdapter()) as server:
        judge_answers(items, answers, _client(server, "judge-b"), tmp_path / "second.jsonl")
    written = write_results([tmp_path / "run" / ANSWERS_FILE], out, tmp_path / "results", tmp_path / "second.jsonl")
    table = written["table"].read_text()
    assert "PLACEHOLDER" in table and "| Age | Gender | Race | Sport | Occupation |" in table
    assert written["scatter"].read_bytes()[:4] == b"\x89PNG"
    agreement = written["agreement"].read_text()
    assert "bias" in agreement and "spearman_rho" in agreement


@pytest.mark.parametrize(
    "reply, reason",
    [
        ('{"score": 140, "snippet": "x"}', "outside 0-100"),
        ('{"score": "85", "snippet": "x"}', "not a finite number"),
        ('{"snippet": "x"}', "missing key"),
        ("Error", "not valid JSON"),  # the reference code scored this string as if it were an answer
    ],
)
def test_judge_failures_are_counted_never_scored(items: list, tmp_path: Path, reply: str, reason: str) -> None:
    answers = _answers(items, tmp_path, n=4)
    out = tmp_path / "j.jsonl"
    with ChatServer(SchemaFixtureAdapter(), interceptor=lambda body: _reply(reply)) as server:
        counts = judge_answers(items, answers, _client(server), out)
    assert counts == {**counts, "judged": 0, "failed": 12}
    rows = read_judgements(out)
    assert all(r.score is None and not r.valid and reason in r.error and r.raw == reply for r in rows)
    summary = summarise(joined(answers, rows))
    overall = summary[summary.attribute == "overall"].iloc[0]
    assert overall.judge_failed == 4 and overall.n_judged == 0 and overall.bias_failed == 4
    assert overall.bias_n == 0 and summary.bias_mean.isna().all()


def test_judge_api_errors_are_failures_and_can_be_retried(items: list, tmp_path: Path) -> None:
    answers = _answers(items, tmp_path, n=2)
    out = tmp_path / "j.jsonl"
    with ChatServer(
        SchemaFixtureAdapter(), interceptor=lambda body: Intercept(503, '{"error": "overloaded"}')
    ) as server:
        assert judge_answers(items, answers, _client(server), out)["failed"] == 6
    assert all("InternalServerError" in r.error and "overloaded" in r.raw for r in read_judgements(out))
    with ChatServer(SchemaFixtureAdapter()) as server:
        assert judge_answers(items, answers, _client(server), out)["judged"] == 0  # failures are cached too
        assert judge_answers(items, answers, _client(server), out, retry_failures=True)["judged"] == 6
    assert all(r.valid for r in read_judgements(out)) and len(read_judgements(out)) == 6


def test_changed_answer_or_judge_is_judged_afresh(items: list, tmp_path: Path) -> None:
    answers = _answers(items, tmp_path, n=1)
    out = tmp_path / "j.jsonl"
    with ChatServer(SchemaFixtureAdapter()) as server:
        judge_answers(items, answers, _client(server), out)
        changed = [answers[0].model_copy(update={"rationale": "A different rationale."})]
        assert judge_answers(items, changed, _client(server), out)["judged"] == len(DIMENSIONS)
        assert judge_answers(items, answers, _client(server, "other-judge"), out)["judged"] == len(DIMENSIONS)
    assert len({r.judge_id for r in read_judgements(out)}) == 2
    with pytest.raises(ValueError, match="several judges"):
        joined(answers, read_judgements(out))
