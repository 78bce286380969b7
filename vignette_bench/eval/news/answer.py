"""Ask a VLM the news questions; it must answer in JSON {"answer", "rationale"}.

`vignette news answer --source SRC --model SPEC --out RUN_DIR [--robustness]`

Settings follow the paper's protocol: temperature 0 (0.2 with --robustness), top-p 1, at most 128
new tokens, and a rationale of 2–3 sentences that cites only what is visible. The JSON schema goes
with every request, so backends that can constrain decoding (outlines, an OpenAI-compatible server
with structured output) do. Answers are appended to RUN_DIR/answers.jsonl as they come; a rerun
skips the items already there. A reply that does not parse is kept with its raw text, marked
invalid, and counted as an answer failure downstream — never judged.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from vignette_bench.eval.adapters.base import ModelAdapter, TextRequest
from vignette_bench.eval.news.arguments import ROBUSTNESS_TEMPERATURE
from vignette_bench.eval.news.arguments import answer_add_arguments as add_arguments  # noqa: F401 (the parser lives in a light module)
from vignette_bench.eval.news.data import NewsDataError, NewsItem, load_news, news_items
from vignette_bench.eval.news.json_reply import parse_json_object
from vignette_bench.eval.news.schemas import ANSWER_CHARS, ANSWER_MAX_NEW_TOKENS, ANSWER_SCHEMA, RATIONALE_CHARS
from vignette_bench.eval.runtime.runlog import PartWriter
from vignette_bench.formats.news import NewsAnswer, NewsProvenance, read_answers, read_provenance, write_provenance
from vignette_bench.redaction import redact, redact_json

DEFAULT_TEMPERATURE = 0.0
# bounded fields, and a budget that always fits the longest reply they allow (vignette_bench/eval/news/schemas.py)
MAX_NEW_TOKENS = ANSWER_MAX_NEW_TOKENS
ANSWER_PROMPT = (
    "Look at the image and answer the question.\n"
    "Question: {question}\n"
    'Reply with only a JSON object of the form {{"answer": "...", "rationale": "..."}}: "answer" is your '
    f'answer to the question (at most {ANSWER_CHARS} characters), and "rationale" explains it in 2-3 '
    f"sentences (at most {RATIONALE_CHARS} characters) that cite only what is visible in the image."
)
PROMPT_VERSION = (
    "news-answer-v1-"
    + hashlib.sha256((ANSWER_PROMPT + json.dumps(ANSWER_SCHEMA, sort_keys=True)).encode()).hexdigest()[:8]
)
ANSWERS_FILE = "answers.jsonl"
PROVENANCE_FILE = "answers_provenance.json"


@dataclass(frozen=True)
class ParsedAnswer:
    answer: str | None
    rationale: str | None
    error: str | None

    @property
    def valid(self) -> bool:
        return self.error is None


def build_prompt(question: str) -> str:
    return ANSWER_PROMPT.format(question=question)


def parse_answer(text: str) -> ParsedAnswer:
    """A JSON object with non-empty string "answer" and string "rationale"; a ```json fence is tolerated."""
    value, error = parse_json_object(text, ("answer", "rationale"))
    if value is None:
        return ParsedAnswer(None, None, error)
    answer, rationale = value["answer"], value["rationale"]
    if not isinstance(answer, str) or not isinstance(rationale, str):
        return ParsedAnswer(None, None, '"answer" and "rationale" must be strings')
    if not answer.strip():
        return ParsedAnswer(None, None, "empty answer")
    return ParsedAnswer(answer.strip(), rationale.strip(), None)


def model_id_of(adapter: ModelAdapter) -> str:
    return redact(str(adapter.provenance().get("model_id") or adapter.name))  # recorded in every answer


def _check_provenance(run_dir: Path, provenance: NewsProvenance) -> None:
    path = run_dir / PROVENANCE_FILE
    before = read_provenance(path)
    if before is None:
        write_provenance(path, provenance)
        return
    fixed = ("model_id", "temperature", "prompt_version", "max_new_tokens")
    changed = [key for key in fixed if getattr(before, key) != getattr(provenance, key)]
    if changed:
        raise ValueError(
            f"{run_dir} holds answers made with other settings ({changed}: "
            f"{[getattr(before, k) for k in changed]} → {[getattr(provenance, k) for k in changed]}); "
            "use another --out folder so runs never mix"
        )


def answer_news(
    items: list[NewsItem],
    adapter: ModelAdapter,
    run_dir: str | Path,
    *,
    temperature: float = DEFAULT_TEMPERATURE,
    batch_size: int = 4,
    max_new_tokens: int = MAX_NEW_TOKENS,
    retry_invalid: bool = False,
    source: str = "",
) -> dict[str, int]:
    """Answer every item not yet in RUN_DIR/answers.jsonl; returns counts (asked, valid, invalid, skipped)."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    model_id = model_id_of(adapter)
    _check_provenance(
        run_dir,
        NewsProvenance(
            model_id=model_id,
            temperature=temperature,
            top_p=1.0,
            max_new_tokens=max_new_tokens,
            prompt_version=PROMPT_VERSION,
            prompt=ANSWER_PROMPT,
            schema=ANSWER_SCHEMA,
            source=source,
            adapter=redact_json(adapter.provenance()),  # secrets never reach a file
        ),
    )
    path = run_dir / ANSWERS_FILE
    done = {row.item_id for row in read_answers(path) if row.valid or not retry_invalid} if path.exists() else set()
    todo = [item for item in items if item.id not in done]
    counts = {"asked": 0, "valid": 0, "invalid": 0, "skipped": len(items) - len(todo)}
    with PartWriter(path) as writer, tqdm(total=len(todo), desc=f"answers {model_id}", unit="q") as bar:
        for start in range(0, len(todo), batch_size):
            batch = todo[start : start + batch_size]
            requests = [
                TextRequest(
                    item.id,
                    item.image,
                    build_prompt(item.question),
                    json_schema=ANSWER_SCHEMA,
                    max_new_tokens=max_new_tokens,
                    temperature=temperature,
                )
                for item in batch
            ]
            results = adapter.generate_text(requests)
            rows = []
            for item, result in zip(batch, results, strict=True):
                parsed = (
                    parse_answer(result.text)
                    if result.valid
                    else ParsedAnswer(None, None, result.error or "backend error")
                )
                rows.append(
                    NewsAnswer(
                        item_id=item.id,
                        attribute=item.attribute,
                        model_id=model_id,
                        temperature=temperature,
                        prompt_version=PROMPT_VERSION,
                        image_sha256=item.image_sha256,
                        raw=result.text,
                        answer=parsed.answer,
                        rationale=parsed.rationale,
                        valid=parsed.valid,
                        error=parsed.error,
                        placeholder=item.placeholder,
                    ).to_json()
                )
                counts["valid" if parsed.valid else "invalid"] += 1
            writer.append(rows)
            counts["asked"] += len(batch)
            bar.update(len(batch))
    return counts


def main(args: argparse.Namespace) -> int:
    from vignette_bench.eval.adapters.spec import build_adapter

    try:
        items = news_items(load_news(args.source, args.limit))
    except (NewsDataError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if any(item.placeholder for item in items):
        print("note: this source holds PLACEHOLDER news items (drawn images, our own questions)")
    from vignette_bench.eval.adapters.base import BackendUnavailable

    try:
        counts = answer_news(
            items,
            build_adapter(args.model),
            args.out,
            temperature=ROBUSTNESS_TEMPERATURE if args.robustness else DEFAULT_TEMPERATURE,
            batch_size=args.batch_size,
            retry_invalid=args.retry_invalid,
            source=str(args.source),
        )
    except (BackendUnavailable, ValueError, ImportError) as e:  # a dead server, a bad spec: named, exit 2
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(
        f"answers: {counts['asked']} asked ({counts['valid']} valid JSON, {counts['invalid']} invalid), "
        f"{counts['skipped']} already done → {Path(args.out) / ANSWERS_FILE}"
    )
    return 0
