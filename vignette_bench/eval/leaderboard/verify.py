"""``vignette leaderboard verify ENTRY --model SPEC``: re-ask a random subset and compare.

`validate` proves an entry's numbers follow from its responses; only re-asking shows the model gave
them. Nothing the submitter controls steers it:

* The model that answers is the maintainer's choice (``--model``), never the entry's: open weights by
  model id and revision run on the maintainer's machine (``hf:``, ``vllm:``; reference and tiny models
  too), and an API model only at its provider's own endpoint (`PROVIDER_ENDPOINTS`). Any other
  endpoint (a server the entry or its submitter names) is refused: a server answering as a famous
  model id proves nothing about that model. The record says where it answered (`endpoint`).
* The subset is drawn from a fresh random seed (`secrets`) made when `verify` runs and recorded in the
  signed record, so anyone can redraw which questions were asked (`subset`), but nobody can know or
  steer it before: it is no function of the entry (grinding a free field such as ``submitted.notes``
  changes nothing).
* Questions are rebuilt from the board's official source only (official.py), never a source the entry
  names, with the runner's own code (same pair image, wording and option order).

Then:

* greedy choice and score mode (deterministic): the re-asked answer must agree with the recorded one on
  at least ``min_agreement`` (default 95%) of the subset. Greedy: the same choice. Score mode: every
  option's probability within a tolerance, and the same choice unless the recorded probabilities call
  it a near-tie (the re-asked choice's recorded probability within twice the tolerance of the recorded
  choice's), because a tie flips with the kernels' rounding. The tolerance is 0.02 for float32 runs and
  0.05 where either run is bf16/fp16: on one H200 at LLaVA-1.6-7B shapes in bf16, changing only the
  batch settings moved probabilities by up to 0.031 and flipped 3 of 160 choices on near-ties
  (benchmarks/gpu_score_memory.md), which failed an honest entry at 0.02 with equal choices required.
  Altering a share f of the answers passes only if the subset of n happens to hold at most 5% of
  them: for f = 0.3 and n = 50, P < 1e-4.
* sampled answers (temperature > 0 in the adapter settings): agreement of two samples is compared with
  chance (the mean 1/options) by a one-sided binomial test; p < 0.01 passes.

Agreement compares what the metrics read: the choice and, with it, the identity chosen and the side
(`selected_identity`, `chose_left`, derived from the plan, which validate requires to match). The model
the spec names must be the entry's: the re-asking adapter's model id and revision must equal
the entry's ``model.id`` and ``model.revision``, or `verify` refuses, naming both (re-asking another
model proves nothing about this one).

With ``--key`` (a maintainer's private key) the result is signed (signing.py) and written as
``verifications/<entry_id>.json`` beside the entries folder (entry digest, subset size, agreement,
date, hardware, model spec and the model id/revision it reported); without it nothing is written. The
board shows "verified" only for a passed record whose signature is valid, by a key its
``maintainers.json`` lists, and whose digest still matches the entry. The digest covers the whole entry
except where the responses are stored (their sha256 is covered), so publishing them elsewhere keeps the
verification.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import platform
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from vignette_bench.eval.leaderboard import signing
from vignette_bench.eval.leaderboard.arguments import keygen_add_arguments as keygen_add_arguments  # noqa: F401 (the parser lives in a light module)
from vignette_bench.eval.leaderboard.arguments import verify_add_arguments as add_arguments  # noqa: F401 (the parser lives in a light module)
from vignette_bench.eval.leaderboard.entry import EntryError, validate
from vignette_bench.eval.leaderboard.official import Official
from vignette_bench.eval.leaderboard.official import from_args as official_from
from vignette_bench.formats.base import FormatError
from vignette_bench.formats.verification import Mismatch, Verification, read_verification, write_verification

MIN_AGREEMENT = 0.95
PROB_TOL = 0.02  # float32 on both sides
PROB_TOL_HALF = 0.05  # bf16/fp16 on either side (module docstring: measured up to 0.031 on a GPU)
_HALF_DTYPES = ("bfloat16", "float16")
ALPHA_SAMPLED = 0.01


def entry_digest(entry: dict) -> str:
    """sha256 of the entry without ``responses.location`` (moving the file changes nothing that was checked)."""
    body = json.loads(json.dumps(entry))
    body["responses"].pop("location", None)
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def public_spec(spec: str) -> str:
    """The spec as recorded and shown: credentials in a URL (``user:secret@``) and secret-looking query values
    left out."""
    spec = re.sub(r"(://)[^/@\s]*@", r"\1", spec)
    return re.sub(r"(?i)([?&;](?:api_?key|key|token|secret|password|auth)[^=&]*=)[^&\s]*", r"\1***", spec)


def model_of(adapter: Any) -> tuple[str, str]:
    """(model id, revision) as the adapter reports them, spelt as `create` records them ("unknown" when none)."""
    try:
        prov = adapter.provenance() or {}
    except Exception:  # an adapter that cannot say what it is cannot verify anything
        prov = {}
    model_id = prov.get("model_id") or prov.get("id")
    revision = prov.get("model_revision") or prov.get("revision")
    return str(model_id or "unknown"), str(revision or "unknown")


def check_model(entry: dict, adapter: Any, spec: str) -> tuple[str, str]:
    """The adapter's (model id, revision), which must equal the entry's: else re-asking checks another model."""
    got = model_of(adapter)
    want = (str(entry["model"]["id"]), str(entry["model"]["revision"]))
    if got != want:
        raise EntryError(
            "model",
            f"--model {public_spec(spec)!r} is {got[0]!r} at revision {got[1]!r}; the entry names {want[0]!r} at "
            f"revision {want[1]!r}: re-ask the entry's own model and revision",
        )
    return got


def precheck_spec(entry: dict, spec: str) -> None:
    """Refuse before anything is loaded when the spec itself names another model (hf, vllm, openai) or another
    revision (hf, vllm) than the entry; `check_model` then compares what the built adapter reports."""
    from vignette_bench.eval.adapters.backends import BACKENDS
    from vignette_bench.eval.adapters.spec import parse_spec

    parsed = parse_spec(spec)
    backend = BACKENDS[parsed.backend]
    if backend.at is None:  # reference responders and tiny models: only the built adapter can say
        return
    revision = parsed.at if backend.at == "revision" else None
    want_id, want_rev = str(entry["model"]["id"]), str(entry["model"]["revision"])
    if parsed.target != want_id or (revision is not None and revision != want_rev):
        named = f"{parsed.target!r}" + (f" at revision {revision!r}" if revision is not None else "")
        raise EntryError(
            "model",
            f"--model {public_spec(spec)!r} names {named}; the entry names {want_id!r} at revision {want_rev!r}: "
            "re-ask the entry's own model and revision",
        )


# API models are re-asked only at their provider's own endpoint (OpenAI-compatible base URLs). A server the
# entry or its submitter names is refused: its answers would show what that server says, not the model.
PROVIDER_ENDPOINTS = (
    "https://api.openai.com/v1",
    "https://api.anthropic.com/v1",
    "https://generativelanguage.googleapis.com/v1beta/openai",
    "https://api.mistral.ai/v1",
    "https://api.x.ai/v1",
)
LOCAL = "local"


def endpoint_of(spec: str) -> str:
    """Where a spec's model answers: LOCAL (weights or a reference model on this machine) or an allow-listed
    provider endpoint; anything else is refused (EntryError on ``--model``)."""
    from urllib.parse import urlsplit, urlunsplit

    from vignette_bench.eval.adapters.backends import BACKENDS
    from vignette_bench.eval.adapters.spec import SpecError, parse_spec

    def public_url(url: str) -> str:  # scheme, host, port and path: no credentials, no query
        parts = urlsplit(url)
        netloc = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))

    try:
        parsed = parse_spec(spec)
    except SpecError as e:
        raise EntryError("--model", str(e)) from None
    if BACKENDS[parsed.backend].at != "url" and "base_url" not in parsed.options:
        return LOCAL
    url = public_url(str(parsed.options.get("base_url") or parsed.at or "")).rstrip("/")
    if url not in PROVIDER_ENDPOINTS or "base_url" in parsed.options:
        raise EntryError(
            "--model",
            f"{public_spec(spec)!r} re-asks at {url!r}, which is not a provider's own endpoint "
            f"({', '.join(PROVIDER_ENDPOINTS)}). Re-ask open weights on this machine (hf:ID@REVISION, "
            "vllm:ID@REVISION) or an API model at its provider: a server named by the entry or its submitter "
            "answers for itself, not for the model",
        )
    return url


def new_subset_seed() -> int:
    """A seed nobody can know before `verify` runs: from the operating system's randomness, not the entry."""
    import secrets

    return secrets.randbits(63)


def subset(question_ids: Any, n: int, seed: int) -> list[str]:
    """The re-asked questions: `n` of the sorted ids drawn with `seed` (a record's subset_seed redraws them)."""
    ids = np.array(sorted(str(q) for q in question_ids))
    rng = np.random.default_rng(seed)
    return sorted(rng.choice(ids, size=min(n, len(ids)), replace=False).tolist())


def _hardware() -> str:
    text = f"{platform.machine()} {platform.system()}, python {platform.python_version()}"
    try:
        import torch

        if torch.cuda.is_available():
            text += f", {torch.cuda.get_device_name(0)} x{torch.cuda.device_count()}"
        else:
            text += ", cpu"
        text += f", torch {torch.__version__}"
    except ImportError:
        pass
    return text


def _mode(entry: dict, frame: Any) -> str:
    if frame["probabilities"].notna().any() if "probabilities" in frame else False:
        return "score"
    adapter = entry.get("adapter") or {}
    temperature = adapter.get("temperature") or (adapter.get("generation") or {}).get("temperature")
    sampled = adapter.get("do_sample") or (isinstance(temperature, (int, float)) and temperature > 0)
    return "sampled" if sampled else "greedy"


def prob_tolerance(entry_adapter: dict[str, Any], adapter: Any) -> float:
    """PROB_TOL, or PROB_TOL_HALF when the recorded run or the re-asking model computes in bf16/fp16."""
    dtypes = [str(entry_adapter.get("dtype") or ""), str(getattr(getattr(adapter, "model", None), "dtype", ""))]
    return PROB_TOL_HALF if any(h in d for d in dtypes for h in _HALF_DTYPES) else PROB_TOL


def score_agreement(
    options: list[str], recorded: str | None, re_asked: str | None, p_old: Any, p_new: Any, tol: float
) -> tuple[bool, float, bool]:
    """(agrees, largest |probability difference|, near-tie flip) of one score-mode answer."""
    if p_old is None or p_new is None or len(p_old) != len(p_new):
        return False, float("nan"), False
    old, new = np.asarray(p_old, float), np.asarray(p_new, float)
    d = float(np.max(np.abs(old - new)))
    if d > tol:
        return False, d, False
    if recorded == re_asked:
        return True, d, False
    opts = list(options)
    if recorded not in opts or re_asked not in opts:
        return False, d, False
    # A tie only if the recorded probabilities say so: a recorded choice that its own probabilities contradict
    # (a fabricated one) stays a mismatch.
    tie = bool(abs(old[opts.index(re_asked)] - old[opts.index(recorded)]) <= 2 * tol)
    return tie, d, tie


def verify(
    entry_path: str | Path,
    model_spec: str,
    n: int = 50,
    batch_size: int = 8,
    adapter: Any = None,
    official: Official | None = None,
    seed: int | None = None,
) -> Verification:
    """Re-ask `n` questions of the entry with the maintainer's `model_spec`. `seed` (tests only) fixes the subset;
    by default it is drawn fresh (`new_subset_seed`). `adapter` replaces the spec's model (tests)."""
    from vignette_bench.eval.adapters.base import ChoiceRequest
    from vignette_bench.eval.adapters.spec import build_adapter
    from vignette_bench.eval.runtime.plan import plan_for
    from vignette_bench.formats.run_record import RunSettings

    entry_path = Path(entry_path)
    official = official or Official.default()
    endpoint = endpoint_of(model_spec)  # before anything is read: an entry-named server is never asked
    v = validate(entry_path, official)
    entry, frame = v.entry, v.responses
    if not official.names(entry["dataset"]["source"]):
        raise EntryError(
            "dataset.source",
            "is not the board's official source: verify re-asks questions rebuilt from the official source only "
            "(--source names it); a custom entry on another source is listed, never ranked, never verified",
        )
    if adapter is None:
        precheck_spec(entry, model_spec)
    run = {**(entry.get("run") or {}), "model": model_spec, "source": official.source}
    settings = RunSettings.from_json(run, str(entry_path), "run")
    seed = new_subset_seed() if seed is None else int(seed)
    chosen = set(subset(frame["question_id"], n, seed))
    recorded = frame.set_index("question_id").loc[sorted(chosen)]

    plan = plan_for(settings)
    wanted_pairs = set(recorded["pair_id"])
    items = []
    for row in plan.pairs.rows:
        if row["pair_id"] not in wanted_pairs:
            continue
        todo = [q for q in plan.builder(row) if q.question_id in chosen]
        image = plan.pairs.compose(row) if any(q.modality == "image" for q in todo) else None
        items += [(q, image if q.modality == "image" else None) for q in todo]
    if len(items) != len(chosen):
        raise EntryError(
            "run", f"rebuilt {len(items)} of the {len(chosen)} chosen questions from the source: the plan changed"
        )
    adapter = adapter or build_adapter(model_spec, seed=settings.seed, batch_size=batch_size)
    model_id, model_revision = check_model(entry, adapter, model_spec)
    prepare = getattr(adapter, "prepare", None)
    answers: dict[str, dict[str, Any]] = {}
    for start in range(0, len(items), batch_size):
        batch = items[start : start + batch_size]
        if prepare is not None:
            prepare([q for q, _ in batch])
        results = adapter.choose([ChoiceRequest(q.question_id, img, q.prompt, q.options) for q, img in batch])
        for (q, _), r in zip(batch, results):
            answers[q.question_id] = q.response(r, "")

    mode = _mode(entry, frame)
    score_tol = prob_tolerance(entry.get("adapter") or {}, adapter)
    tol = score_tol if mode == "score" else None
    agreed = near_ties = 0
    diffs: list[float] = []
    mismatches: list[dict[str, Any]] = []
    chance: list[float] = []
    for qid, rec in recorded.iterrows():
        new = answers[qid]
        old_choice = rec["choice"] if isinstance(rec["choice"], str) else None
        # what the metrics read: the choice, and the identity, side and correctness it stands for (validate
        # derived them from the plan, so a recorded choice with a fabricated identity or side cannot agree)
        same = old_choice == new["choice"] and _derived(rec) == _derived(new)
        if mode == "score":
            same, d, tie = score_agreement(
                list(rec["options"]),
                old_choice,
                new["choice"],
                rec.get("probabilities"),
                new["probabilities"],
                score_tol,
            )
            same = same and (old_choice != new["choice"] or _derived(rec) == _derived(new))
            if d == d:  # not NaN: both runs gave probabilities
                diffs.append(d)
            near_ties += int(tie)
        agreed += int(same)
        chance.append(1.0 / max(len(rec["options"]), 1))
        if not same and len(mismatches) < 10:
            mismatches.append({"question_id": qid, "recorded": rec["choice"], "re_asked": new["choice"]})
    n_checked = len(recorded)
    rate = agreed / n_checked if n_checked else float("nan")
    p_value = None
    if mode == "sampled":
        p_value = float(stats.binomtest(agreed, n_checked, float(np.mean(chance)), alternative="greater").pvalue)
        passed = p_value < ALPHA_SAMPLED
        reason = f"agreement {rate:.0%} vs chance {np.mean(chance):.0%}: binomial p = {p_value:.2g} (passes below {ALPHA_SAMPLED})"
    else:
        passed = rate >= MIN_AGREEMENT
        reason = f"{agreed} of {n_checked} re-asked answers equal the recorded ones (passes at >= {MIN_AGREEMENT:.0%})"
        if mode == "score":
            reason += f", probabilities within {tol}"
            if near_ties:
                reason += f" ({near_ties} choice flips on recorded near-ties)"
    return Verification(
        entry_id=entry["entry_id"],
        entry_digest=entry_digest(entry),
        model_spec=public_spec(model_spec),
        mode=mode,
        n_checked=n_checked,
        n_agreed=agreed,
        agreement=rate,
        max_prob_diff=max(diffs) if diffs else None,
        prob_tol=tol,
        near_tie_flips=near_ties,
        p_value=p_value,
        passed=bool(passed),
        reason=reason,
        date=dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat(),
        hardware=_hardware(),
        mismatches=tuple(_mismatch(m) for m in mismatches),
        model_id=model_id,
        model_revision=model_revision,
        subset_seed=seed,
        endpoint=endpoint,
    )


def _derived(row: Any) -> tuple[str, bool | None, bool | None]:
    """(selected_identity, chose_left, correct) as the metrics read them; null and NaN alike."""

    def null(value: Any) -> bool:
        return value is None or (isinstance(value, float) and value != value) or type(value).__name__ == "NAType"

    def flag(value: Any) -> bool | None:
        return None if null(value) else bool(value)

    who = row.get("selected_identity")
    who = "" if null(who) else str(who)
    return who, flag(row.get("chose_left")), flag(row.get("correct"))


def _mismatch(m: dict[str, Any]) -> Mismatch:
    def choice(value: Any) -> str | None:
        return value if isinstance(value, str) else None  # an invalid answer has no choice

    return Mismatch(question_id=str(m["question_id"]), recorded=choice(m["recorded"]), re_asked=choice(m["re_asked"]))


def verification_path(entry_path: Path, entry_id: str) -> Path:
    return Path(entry_path).resolve().parent.parent / "verifications" / f"{entry_id}.json"


@dataclass(frozen=True)
class Status:
    """What the board may say of an entry's verification: `verified` only for a passed record with a valid
    signature by a listed maintainer key, made for exactly this entry; `reason` says why not (None if verified)."""

    record: Verification | None  # the record when its signature holds and it was made for this entry
    verified: bool
    reason: str | None


def verification_status(entry_path: Path, entry: dict, keys: signing.Keys | None = None) -> Status:
    """The entry's verification as the board shows it (keys: the board's maintainers.json, read when not given)."""
    path = verification_path(entry_path, entry["entry_id"])
    if not path.is_file():
        return Status(None, False, "no verification record")
    try:
        data = read_verification(path)
    except FormatError as e:
        return Status(None, False, f"the verification record is unreadable ({e.reason})")  # verifies nothing
    except OSError as e:
        return Status(None, False, f"the verification record cannot be read ({type(e).__name__})")
    if data.subset_seed is None or data.endpoint is None:
        return Status(
            None,
            False,
            "the record predates verification the submitter cannot steer (its subset followed the entry's digest "
            "and it names no endpoint): verify again",
        )
    if keys is None:
        keys = signing.load_keys(Path(entry_path).resolve().parent.parent)
    problem = signing.check(data, keys)
    if problem:
        return Status(None, False, problem)
    if data.entry_id != entry["entry_id"] or data.entry_digest != entry_digest(entry):
        return Status(None, False, "the verification was made for another entry, or before this one was edited")
    if (data.model_id, data.model_revision) != (str(entry["model"]["id"]), str(entry["model"]["revision"])):
        return Status(None, False, "the verification re-asked another model or revision than the entry names")
    if data.endpoint != LOCAL and data.endpoint not in PROVIDER_ENDPOINTS:
        return Status(None, False, f"re-asked at an endpoint the board does not trust ({data.endpoint!r})")
    if not data.passed:
        return Status(data, False, f"the verification failed: {data.reason}")
    return Status(data, True, None)


def load_verification(entry_path: Path, entry: dict, keys: signing.Keys | None = None) -> Verification | None:
    """The entry's verification record if it reads, carries a valid signature by a listed maintainer key, and
    was made for exactly this entry file (passed or failed); None otherwise."""
    return verification_status(entry_path, entry, keys).record


def main(args: argparse.Namespace) -> int:
    key = signing.load_private_key(args.key) if args.key else None  # a bad key fails before any re-asking
    try:
        result = verify(args.entry, args.model, args.limit, args.batch_size, official=official_from(args))
    except EntryError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    word = "VERIFIED" if result.passed else "FAILED"
    if key is None:
        print(f"{word}  {args.entry}: {result.reason}; not signed (no --key): nothing written")
        return 0 if result.passed else 1
    signed = signing.sign(result, key)
    path = write_verification(verification_path(args.entry, result.entry_id), signed)
    print(f"{word}  {args.entry}: {result.reason}; signed by key {signed.signed_by}; wrote {path}")
    return 0 if result.passed else 1


def keygen_main(args: argparse.Namespace) -> int:
    """vignette leaderboard keygen --out PATH: a maintainer key pair; prints the line for maintainers.json."""
    key = signing.generate_key(Path(args.out))
    public = key.public_key()
    line = json.dumps({"name": "YOUR NAME", "public_key": signing.public_key_text(public)})
    print(f"wrote the private key {args.out} (keep it off the repository); key id {signing.key_id(public)}")
    print(f'add its public half to the board\'s {signing.KEYS_FILE} under "keys":\n  {line}')
    return 0
