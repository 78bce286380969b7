"""Secrets never reach a run folder, and a resumed run asks again what the backend never answered
(issue 24, item 6). A real `vignette run` against the project's OpenAI-compatible server
(vignette_bench/eval/serve) with credentials in the URL; the server can be told to answer 401."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest

from vignette_bench.cli import main as vignette
from vignette_bench.dataset_builder.sample import build_sample
from vignette_bench.eval.adapters.base import is_backend_failure
from vignette_bench.eval.adapters.reference import RandomResponder
from vignette_bench.eval.serve.server import ChatServer, Intercept

SECRET = "SECRETpw123"


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> str:
    src = build_sample(tmp_path_factory.mktemp("src"), size=48, identities=("man", "woman"), activities=("cooking",))
    return str(src)


class Gate:
    """Answers normally until `fail_after` chat requests have been served, then 401 for every request."""

    def __init__(self) -> None:
        self.fail_after: int | None = None
        self.served = 0
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> Intercept | None:
        with self.lock:
            self.served += 1
            if self.fail_after is not None and self.served > self.fail_after:
                return Intercept(401, json.dumps({"error": {"message": "invalid api key", "type": "auth"}}))
        return None


@pytest.fixture()
def server():
    gate = Gate()
    with ChatServer(RandomResponder(seed=1), served_model="m", interceptor=gate) as srv:
        yield srv, gate


def _argv(source: str, out: Path, base_url: str) -> list[str]:
    url = base_url.replace("http://", f"http://user:{SECRET}@")
    spec = f"openai:m@{url}?max_consecutive_failures=3&max_retries=0&concurrency=1"
    return [
        "vignette",
        "run",
        "--source",
        source,
        "--config",
        "portraits",
        "--model",
        spec,
        "--out",
        str(out),
        "--sample",
        "1",
        "--seed",
        "5",
        "--size",
        "96x48",
        "--no-progress",
        "--batch-size",
        "4",
        "--paradigms",
        "stereotype",
        "--variants",
        "paraphrase=0",
        "--variants",
        "option_style=identity",
        "--variants",
        "modality=image",
        "--max-invalid",
        "1",
    ]


def _run(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(sys, "argv", argv)  # as the console script sees it (the session log records argv)
    return vignette(argv[1:])


def _files_with_secret(root: Path) -> list[str]:
    return [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]


def test_no_file_of_a_run_holds_the_secret(source, server, tmp_path, monkeypatch, capsys) -> None:
    srv, _ = server
    out = tmp_path / "run"
    assert _run(_argv(source, out, srv.base_url), monkeypatch) == 0, capsys.readouterr().err
    assert (out / "responses.parquet").is_file()
    assert _files_with_secret(out) == []
    record = json.loads((out / "run.json").read_text())
    assert "user:" not in record["settings"]["model"] and "***@127.0.0.1" in record["settings"]["model"]
    session = json.loads((out / "log" / "sessions.jsonl").read_text().splitlines()[-1])
    assert "***@" in session["model_spec"] and any("***@" in word for word in session["argv"])
    # the redacted spec compares equal on resume: a rerun is a resume, not "other settings"
    assert _run(_argv(source, out, srv.base_url), monkeypatch) == 0, capsys.readouterr().err
    assert _files_with_secret(out) == []


def test_a_resumed_run_asks_again_what_the_backend_never_answered(source, server, tmp_path, monkeypatch, capsys):
    srv, gate = server
    out = tmp_path / "run"
    gate.fail_after = 1 + 6  # the start-up probe, then six answers; then 401 for everything
    assert _run(_argv(source, out, srv.base_url), monkeypatch) == 2
    err = capsys.readouterr().err
    assert "rerun the same command to resume" in err and "Traceback" not in err
    rows = [json.loads(line) for p in sorted((out / "log").glob("part-*.jsonl")) for line in p.read_text().splitlines()]
    failed = [r for r in rows if not r["valid"]]
    assert failed and all(is_backend_failure(r["error"]) for r in failed)
    gate.fail_after = None  # the server is back: the same command, no --retry-invalid
    assert _run(_argv(source, out, srv.base_url), monkeypatch) == 0, capsys.readouterr().err
    import pyarrow.parquet as pq

    merged = pq.read_table(out / "responses.parquet").to_pylist()
    assert merged and all(r["valid"] for r in merged), [r["error"] for r in merged if not r["valid"]][:3]
    assert _files_with_secret(out) == []


def test_backend_failures_are_told_from_bad_answers() -> None:
    assert is_backend_failure("AuthenticationError: Error code: 401 - {'error': 'invalid api key'}")
    assert is_backend_failure("APIConnectionError: Connection error.")
    assert is_backend_failure("InternalServerError: Error code: 500")
    assert not is_backend_failure("answer is not one of the options")
    assert not is_backend_failure("")
    assert not is_backend_failure(None)
