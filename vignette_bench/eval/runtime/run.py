"""Put the benchmark's questions to a model: `vignette run --source S --config identity_contrast --model random --out RUN_DIR`.

Answers are appended to RUN_DIR/log/part-<rank>.jsonl batch by batch (written and flushed per
batch, fsync'ed at most every second and at exit: vignette_bench/eval/runtime/runlog.py), so a
rerun with the same --out resumes where the last one stopped, skipping every question already
answered. When every planned question has an answer the parts are merged into
RUN_DIR/responses.parquet (`vignette merge RUN_DIR` does the same by hand).

Many processes: under `torchrun` or `accelerate launch` each process reads RANK and WORLD_SIZE
and takes its share of the pairs (`datasets.distributed.split_dataset_by_node`); for job arrays
pass --shard i/N. Each pair image is composed once for all of its questions.

Sides: with --sample, `--orders balanced` (the default) asks each sampled pair once, in the order
that keeps every identity's left share within one offer of half (vignette.PairSpace); `both` asks
each pair in both orders (twice the cost; exact cancellation of side preference per pair); `rule`
is the order every run used before (docs/eval.md, "Sides"). `--sample auto` picks the number of pairs
from a power plan (planning.py) and records it in run.json.

Filters keep the pairs that match, e.g. the religion pairs of women:
`vignette run --source S --config identity_contrast --model random --out RUN_DIR --filter dimensions=religion --filter gender=female`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import sys
import time
from collections import Counter, deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, fields
from importlib import metadata
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

from datasets import Dataset
from datasets.distributed import split_dataset_by_node
from PIL import Image
from tqdm.auto import tqdm

from vignette_bench.errors import VignetteError
from vignette_bench.eval.adapters.base import BackendUnavailable, ChoiceRequest, ModelAdapter, is_backend_failure
from vignette_bench.eval.runtime.arguments import run_add_arguments as add_arguments  # noqa: F401 (the parser lives in a light module)
from vignette_bench.eval.runtime.folder import RunFolder
from vignette_bench.eval.runtime.merge import MergeError, merge
from vignette_bench.eval.runtime.plan import PairSource, Plan, open_pairs, plan_for
from vignette_bench.eval.runtime.questions import (
    CONFIG_PARADIGMS,
    CONFIGS,
    Question,
    Variants,
    template_hash,
)
from vignette_bench.eval.runtime.runlog import ShardBusy
from vignette_bench.formats.jsonl import iter_part, tail_state
from vignette_bench.formats.run_record import (
    ORDERS,
    DatasetProvenance,
    ModelProvenance,
    RunRecord,
    RunSettings,
    parse_filters,
)
from vignette_bench.redaction import redact, redact_argv, redact_json
from vignette_bench.taxonomy import DATA_DIR, load_taxonomy

if TYPE_CHECKING:  # planning imports scipy.stats: only `--sample auto` (plan_sample_size) needs it
    from vignette_bench.eval.runtime.planning import SamplePlan

# Rows of its own part a run keeps for the final merge (the merge holds every row anyway; above this,
# a long session's memory is spared and the merge reads the part back).
HELD_ROWS_MAX = 1_000_000

# Adapter provenance keys that change the answers: a resumed run must keep them.
# What decides the answers: a resume that would change any of them is refused with what differs
# (batch size, device and concurrency may change between sessions; they do not change answers).
ANSWER_KEYS = (
    "model_id",
    "model_revision",
    "revision",
    "adapter",
    "mode",
    "temperature",
    "top_p",
    "score_norm",
    "seed",
    "sampling",
    "dtype",
    "chat_template_sha256",
    "chat_date",
    "weights_digest",
    "max_new_tokens",
    "base_url",
    "structured",
    "choice_max_tokens",
    "system_prompt",
    "choice_system_prompt",
)
VERSIONED = (
    "torch",
    "transformers",
    "datasets",
    "evaluate",
    "outlines",
    "accelerate",
    "pillow",
    "numpy",
    "pyarrow",
    "vllm",
    "openai",
)


class RunError(VignetteError, RuntimeError):
    """The run cannot start or continue as asked; the message says what to do."""


@dataclass(frozen=True)
class Shard:
    rank: int = 0
    world_size: int = 1

    @classmethod
    def resolve(cls, shard: str | None) -> Shard:
        """--shard i/N wins; else RANK/WORLD_SIZE from torchrun or accelerate; else 0/1."""
        if shard:
            try:
                i, n = (int(x) for x in shard.split("/"))
            except ValueError:
                raise RunError(f"--shard {shard!r}: expected i/N, e.g. 0/4") from None
        else:
            i, n = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
        if not 0 <= i < n:
            raise RunError(f"shard {i}/{n}: need 0 <= i < N")
        return cls(i, n)


@dataclass(frozen=True)
class Session:
    """How this session asks (none of it changes an answer, so a resumed run may change any of it)."""

    shard: Shard = Shard()
    batch_size: int = 16  # questions per model call
    retry_invalid: bool = False  # ask every invalid answer again (backend failures always are)
    progress: bool = True  # a progress bar on stderr
    prefetch: int = 2  # pair images composed ahead while the model answers
    # once this session has `max_invalid_after` answers, more than `max_invalid` of them invalid stops it
    max_invalid: float = 0.9
    max_invalid_after: int = 50

    @classmethod
    def of(cls, **options: Any) -> Session:
        """A Session from `run`'s keyword arguments; an unknown one is named with the valid ones."""
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise RunError(f"run(): unknown option(s) {unknown}; valid: {known}")
        return cls(**options)


def library_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def build_adapter(spec: str, seed: int, batch_size: int) -> ModelAdapter:
    """The adapter a model spec names (vignette_bench/eval/adapters/spec.py); the run's seed and batch size apply where it takes them."""
    from vignette_bench.eval.adapters.spec import build_adapter as build_model_adapter

    return build_model_adapter(spec, seed=seed, batch_size=batch_size)


def _check_or_write_record(folder: RunFolder, record: RunRecord) -> None:
    if not folder.has_record():
        folder.write_record(record)
        return
    path, old = folder.record_path, folder.read_record()  # an older version reads through RunRecord.migrate
    # The model spec may change between sessions in what does not change answers (batch size, device,
    # concurrency: e.g. a smaller batch after running out of memory); each session logs its own.
    before_s, now_s = (r.settings.model_copy(update={"model": ""}).as_dict() for r in (old, record))
    if before_s != now_s:
        raise RunError(
            f"{path}: this folder holds a run with other settings ({old.settings.as_dict()} != {record.settings.as_dict()}); "
            f"resume with the same options or choose another --out"
        )
    if old.template_hash != record.template_hash:
        raise RunError(
            f"{path}: the questions' wording changed since this run started (template hash "
            f"{old.template_hash} != {record.template_hash}); finish it with the old code or use another --out"
        )
    recorded = old.model.to_json()
    keys = [k for k in ANSWER_KEYS if k in recorded]  # what an older record did not note cannot be compared
    before, now = ({k: m.get(k) for k in keys} for m in (recorded, record.model.to_json()))
    if before != now:
        differs = "; ".join(f"{k}: {before[k]!r} -> {now[k]!r}" for k in keys if before[k] != now[k])
        raise RunError(
            f"{path}: resuming would mix answers of two setups ({differs}); resume with the same model and "
            "settings, or use another --out"
        )


def _plan(folder: RunFolder, source: PairSource, settings: RunSettings) -> Dataset:
    """The pair plan: read back from the folder when resuming, else taken from the source and kept."""
    if folder.has_plan():
        return Dataset(folder.read_plan())
    table = source.rows.with_format("arrow")[:]
    if len(table) == 0:
        raise RunError(
            f"no pairs for config {settings.config!r} with filters {dict(settings.filters)} in {settings.source}"
        )
    # the sides' rule travels with the plan (pair_id's L0/L1 says each pair's order; this says how they were chosen)
    table = table.replace_schema_metadata(
        {**(table.schema.metadata or {}), b"vignette.orders": settings.orders.encode()}
    )
    folder.write_plan(table)  # every rank computes the same plan; the last rename wins harmlessly
    return Dataset(folder.read_plan())


@dataclass(frozen=True)
class RunResult:
    asked: int
    invalid: int  # of those asked: answers outside the options, refusals, backend errors
    skipped: int  # already answered in an earlier session
    pairs_composed: int
    seconds: float
    responses: Path | None  # the merged parquet, once every part is complete


def run(
    settings: RunSettings,
    run_dir: str | Path,
    *,
    adapter: ModelAdapter | None = None,
    source: PairSource | None = None,
    planning: SamplePlan | None = None,
    **session: Any,
) -> RunResult:
    """Ask every planned question of this shard that has no answer yet; merge when all shards are done.
    `session`: how this session asks, the fields of `Session` (shard, batch_size, retry_invalid, progress,
    prefetch, max_invalid, max_invalid_after). `source`: the pairs (default: `open_pairs(settings)`)."""
    how = Session.of(**session)
    _check_options(settings, how)
    # everything that can fail on bad input comes before the run folder exists (no empty folders left)
    adapter = adapter or build_adapter(settings.model, settings.seed, how.batch_size)
    pairs = source if source is not None else open_pairs(settings)
    folder = RunFolder(run_dir).create()
    for leftover in folder.remove_stale_temporaries():
        print(f"removed {leftover.name}: a temporary file of a process that died", file=sys.stderr)
    # the source's taxonomy, copied once: questions (and merge's check) use that copy
    plan = plan_for(settings, pairs, load_taxonomy(folder.keep_taxonomy(pairs.taxonomy or str(DATA_DIR))))
    record = _record(folder, plan, adapter, planning)
    _check_or_write_record(folder, record)
    mine = split_dataset_by_node(_plan(folder, pairs, settings), rank=how.shard.rank, world_size=how.shard.world_size)
    asking = _Asking.start(folder, plan, mine, adapter, record, how)
    start = time.perf_counter()
    try:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="compose") as pool:
            asking.answer_pairs(pool)
    finally:
        asking.close()
    seconds = time.perf_counter() - start
    responses = _merge(folder, how.shard, asking.held())
    return RunResult(asking.asked, asking.guard.invalid, asking.already, asking.composed, seconds, responses)


def _record(folder: RunFolder, plan: Plan, adapter: ModelAdapter, planning: SamplePlan | None) -> RunRecord:
    """The run.json of this session. Secrets never reach a file: the spec (URL userinfo, api_key=…), the
    provenance and the argv are recorded redacted — on both sides of the resume check, so a resumed run
    still compares equal."""
    settings = plan.settings
    where = str(folder.record_path)  # names the file if an adapter or source reports a bad value
    return RunRecord(
        settings=settings.model_copy(update={"model": redact(settings.model)}),
        template_hash=template_hash(plan.taxonomy),
        model=ModelProvenance.from_adapter(redact_json(adapter.provenance()), where),
        dataset=DatasetProvenance.from_json(
            {"source": settings.source, "config": settings.config, **plan.pairs.revision}, where, "dataset"
        ),
        versions=library_versions(),
        planning=planning.to_json() if planning is not None else None,
    )


def _merge(folder: RunFolder, shard: Shard, held: dict[Path, list[dict]]) -> Path | None:
    """responses.parquet once every shard's part is complete; None while other shards still run."""
    try:
        return merge(folder.path, write=True, held=held).written
    except MergeError as e:
        if shard.world_size == 1:
            raise
        print(
            f"rank {shard.rank} done; other shards still running ({e}). "
            f"When all have finished: vignette merge {folder.path}",
            file=sys.stderr,
        )
        return None


@dataclass(eq=False)
class _Asking:
    """One session's questions: what this rank already has, the part it appends to, and the loop that composes
    pair images ahead (on a worker thread) while the model answers, asking and logging in plan order."""

    folder: RunFolder
    plan: Plan
    mine: Dataset  # this rank's pairs
    adapter: ModelAdapter
    how: Session
    model_id: str
    done_pair: dict[str, str]  # answered question id -> its pair
    own_rows: list[dict]  # this rank's part as read, then appended to: held for the final merge
    own_is_whole: bool  # nothing was appended between that read and taking the part's lock
    per_pair: int  # questions per pair (the same for every pair of a config)
    already: int  # of this rank's questions, answered in an earlier session
    writer: Any  # the part's PartWriter (runlog.py)
    bar: Any  # tqdm
    guard: _InvalidGuard
    asked: int = 0
    composed: int = 0

    @classmethod
    def start(
        cls, folder: RunFolder, plan: Plan, mine: Dataset, adapter: ModelAdapter, record: RunRecord, how: Session
    ) -> _Asking:
        """Read what is answered, take this rank's part and log the session (refusing a config without questions)."""
        settings, shard = plan.settings, how.shard
        # This rank's part, as read here and then appended to, is held for the final merge (which then
        # decodes only the other ranks' parts); above HELD_ROWS_MAX rows the merge reads it back instead.
        own_part = folder.part_path(shard.rank)
        own_bytes = tail_state(own_part)[0] if own_part.exists() else 0
        done_pair, own_rows = _answered_so_far(folder, own_part, how.retry_invalid)
        done_per_pair = Counter(done_pair.values())
        per_pair = len(plan.builder(mine[0])) if len(mine) else 0  # the same for every pair of a config
        if len(mine) and not per_pair:
            raise RunError(
                f"{settings.config}: no question has the wording variants {settings.variants.as_dict()} "
                f"(activity-contrast options are activities: it has no position style)"
            )
        already = sum(min(done_per_pair[p], per_pair) for p in mine["pair_id"])
        model_id = record.model.model_id if record.model.model_id is not None else record.settings.model
        writer = folder.part_writer(shard.rank)
        folder.append_session(
            {
                "rank": shard.rank,
                "world_size": shard.world_size,
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "started": time.time(),
                "already_answered": already,
                "repaired_torn_bytes": writer.repaired_bytes,
                "batch_size": how.batch_size,
                "model_spec": record.settings.model,
                "model": record.model.to_json(),
                "argv": redact_argv(sys.argv),
            }
        )
        bar = tqdm(
            total=per_pair * len(mine),
            initial=already,
            unit="q",
            disable=not how.progress,
            position=shard.rank,
            desc=f"{settings.config} [{shard.rank}/{shard.world_size}]",
            dynamic_ncols=True,
        )  # one line per rank
        return cls(
            folder,
            plan,
            mine,
            adapter,
            how,
            model_id,
            done_pair,
            own_rows,
            own_part.stat().st_size == own_bytes,
            per_pair,
            already,
            writer,
            bar,
            _InvalidGuard(how.max_invalid, how.max_invalid_after, folder.path),
        )

    def ask(self, batch: list[tuple[Question, Image.Image | None]]) -> None:
        """One model call; its rows appended to the part (and held), counted by the guard."""
        questions = [q for q, _ in batch]
        prepare = getattr(self.adapter, "prepare", None)
        if prepare is not None:
            prepare(questions)
        requests = [ChoiceRequest(q.question_id, image, q.prompt, q.options) for q, image in batch]
        results = self.adapter.choose(requests)
        if [r.question_id for r in results] != [q.question_id for q in questions]:
            raise RunError(
                f"adapter {type(self.adapter).__name__} answered {len(results)} results for {len(questions)} "
                f"questions or out of order; adapters must return one result per request, in order"
            )
        rows = [q.response(r, self.model_id) for q, r in zip(questions, results)]
        self.writer.append(rows)
        if len(self.own_rows) <= HELD_ROWS_MAX:
            self.own_rows.extend(rows)
        self.bar.update(len(batch))
        self.guard.add(rows)

    def work(self) -> Iterator[tuple[dict[str, Any], list[Question]]]:
        """Pairs with unanswered questions, in plan order, with those questions."""
        done, per_pair = self.done_pair.keys(), self.per_pair
        done_per_pair = Counter(self.done_pair.values())
        for i, pair_id in enumerate(self.mine["pair_id"]):
            if done_per_pair[pair_id] >= per_pair and per_pair:
                continue  # whole pair answered: neither rebuild its questions nor compose its image
            row = self.mine[i]
            questions = self.plan.builder(row)
            if len(questions) != per_pair:  # the skip rule above relies on this
                raise RunError(
                    f"pair {pair_id}: {len(questions)} questions where every {self.plan.settings.config} pair has "
                    f"{per_pair}; this is a bug in vignette_bench/eval/runtime/questions.py"
                )
            todo = [q for q in questions if q.question_id not in done]
            if todo:
                yield row, todo

    def answer_pairs(self, pool: ThreadPoolExecutor) -> None:
        # Images of the next pairs are composed on a worker thread while the model answers the current
        # batch (PIL decodes and resizes without the GIL); questions are still asked and logged in plan order.
        batch_size, compose = self.how.batch_size, self.plan.pairs.compose
        pending: list[tuple[Question, Image.Image | None]] = []
        lookahead: deque[tuple[list[Question], Future | None]] = deque()
        try:
            for row, todo in chain(self.work(), [(None, [])]):
                if row is not None:
                    needs_image = any(q.modality == "image" for q in todo)
                    lookahead.append((todo, pool.submit(compose, row) if needs_image else None))
                while lookahead and (len(lookahead) > self.how.prefetch or row is None):
                    todo, future = lookahead.popleft()
                    image = future.result() if future is not None else None
                    self.composed += future is not None
                    pending.extend((q, image if q.modality == "image" else None) for q in todo)
                    while len(pending) >= batch_size:
                        self.ask(pending[:batch_size])
                        self.asked += batch_size
                        del pending[:batch_size]
            if pending:
                self.ask(pending)
                self.asked += len(pending)
        finally:  # after an error, compose nothing more
            for _, future in lookahead:
                if future is not None:
                    future.cancel()

    def close(self) -> None:
        self.writer.close()
        self.bar.close()

    def held(self) -> dict[Path, list[dict]]:
        """This rank's rows for the merge, when they are the whole part and few enough to hold."""
        whole = len(self.own_rows) <= HELD_ROWS_MAX and self.own_is_whole
        return {self.folder.part_path(self.how.shard.rank): self.own_rows} if whole else {}


def _check_options(settings: RunSettings, how: Session) -> None:
    """Refuse settings that cannot run, naming the option, before anything is written."""
    if settings.config not in CONFIGS:
        raise RunError(f"--config {settings.config!r}: expected one of {CONFIGS}")
    if not any(p in CONFIG_PARADIGMS[settings.config] for p in settings.paradigms):
        raise RunError(
            f"--paradigms {','.join(settings.paradigms)}: {settings.config} pairs carry none of them; "
            f"they carry {','.join(CONFIG_PARADIGMS[settings.config])}"
        )
    if how.batch_size < 1:
        raise RunError(f"--batch-size {how.batch_size}: must be at least 1")
    if not 0 <= how.max_invalid <= 1 or how.max_invalid_after < 1:
        raise RunError(
            f"--max-invalid {how.max_invalid} --max-invalid-after {how.max_invalid_after}: "
            "need a fraction in [0, 1] (1 turns the check off) and at least 1 answer"
        )


def _answered_so_far(folder: RunFolder, own_part: Path, retry_invalid: bool) -> tuple[dict[str, str], list[dict]]:
    """(answered question id -> its pair, this rank's own rows) from every rank's part in the folder. A question
    answered twice counts once; a backend failure (401, dead server, 5xx after retries) was never answered, so it
    is asked again, and with `retry_invalid` every invalid answer is."""
    done_pair: dict[str, str] = {}
    own_rows: list[dict] = []
    for path in folder.part_paths():
        for r in iter_part(path):
            if path == own_part:
                own_rows.append(r)
            if r.get("valid") or not (retry_invalid or is_backend_failure(r.get("error"))):
                done_pair[r["question_id"]] = r["pair_id"]
    return done_pair, own_rows


class _InvalidGuard:
    """Stops a session whose answers are mostly invalid: a model or server that cannot answer (schema ignored,
    template refusing images, wrong mode) would otherwise fill a "complete" run with invalid rows and exit 0."""

    def __init__(self, max_invalid: float, max_invalid_after: int, where: Path) -> None:
        self.max_invalid, self.max_invalid_after, self.where = max_invalid, max_invalid_after, where
        self.answered = self.invalid = 0
        self.errors: Counter[str] = Counter()  # this session's invalid answers by error, for the stop message
        self.example: dict[str, str] = {}  # one raw reply per error

    def add(self, rows: list[dict[str, Any]]) -> None:
        """Count a logged batch; raise RunError once more than max_invalid of at least max_invalid_after are invalid."""
        self.answered += len(rows)
        for row in rows:
            if not row["valid"]:
                self.invalid += 1
                self.errors[row["error"] or "invalid"] += 1
                self.example.setdefault(row["error"] or "invalid", row["raw"] or "")
        if self.answered >= self.max_invalid_after and self.invalid > self.max_invalid * self.answered:
            error, count = self.errors.most_common(1)[0]
            raise RunError(
                f"{self.invalid} of the {self.answered} answers of this session are invalid (more than "
                f"{self.max_invalid:.0%}); most often ({count}): {error!r}, e.g. raw reply {self.example[error][:160]!r}. "
                f"The answers so far are kept in {self.where}. Check the model spec (docs/openai.md: "
                "system_prompt=user, structured; docs/adapters.md: mode=score), then rerun the same command to resume "
                "(it asks backend failures again; --retry-invalid asks the other invalid answers again too); "
                "--max-invalid 1 turns this check off"
            )


def plan_sample_size(
    settings: RunSettings, effect_pp: float, icc: float | None = None, alpha: float = 0.05, power: float = 0.8
) -> SamplePlan:
    """`--sample auto`: the power plan for the run's selection (filters, the source's coverage) and questions."""
    import vignette
    from vignette_bench.eval.runtime.planning import plan_for_space

    source = vignette.Source(settings.source)
    taxonomy = load_taxonomy(source.url("taxonomy"))
    space = vignette.PairSpace(
        taxonomy,
        settings.config,
        coverage=vignette.RenderIndex.load(source).coverage,
        filters=settings.pair_config().filters(),
    )
    extra = {} if icc is None else {"icc": icc}
    return plan_for_space(
        space,
        taxonomy,
        settings.seed,
        settings.paradigms,
        settings.variants,
        effect_pp=effect_pp,
        alpha=alpha,
        power=power,
        **extra,
    )


def _parse_sample(text: str | None) -> int | str | None:
    if text is None or text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise RunError(f"--sample {text!r}: expected a number of pairs or 'auto'") from None


def _recorded_orders(out: str) -> str | None:
    """The orders of the run already in --out (so a resume without --orders keeps them), if any."""
    folder = RunFolder(out)
    return folder.read_record().settings.orders if folder.has_record() else None


def main(args: argparse.Namespace) -> int:
    try:
        sample = _parse_sample(args.sample)
        orders = args.orders or _recorded_orders(args.out) or ORDERS[0]
        settings = RunSettings(
            source=args.source,
            config=args.config,
            model=args.model,
            seed=args.seed,
            paradigms=tuple(x.strip() for x in args.paradigms.split(",") if x.strip()),
            variants=Variants.parse(args.variants),
            sample=None,
            filters=parse_filters(args.filter),
            image_size=args.size,
            orders=orders,
        )
        planning = None
        if sample == "auto":
            planning = plan_sample_size(settings, args.detectable_effect, args.icc)
            print(planning.describe(), file=sys.stderr)
            sample = planning.pairs if planning.pairs < planning.pairs_available else None  # all of them: no sample
        settings = settings.model_copy(update={"sample": sample if isinstance(sample, int) else None})
        result = run(
            settings,
            args.out,
            shard=Shard.resolve(args.shard),
            batch_size=args.batch_size,
            retry_invalid=args.retry_invalid,
            progress=not args.no_progress,
            prefetch=args.prefetch,
            planning=planning,
            max_invalid=args.max_invalid,
            max_invalid_after=args.max_invalid_after,
        )
    except (RunError, MergeError, ValueError, LookupError, OSError, BackendUnavailable, ShardBusy) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps({**asdict(result), "responses": str(result.responses) if result.responses else None}))
    return 0
