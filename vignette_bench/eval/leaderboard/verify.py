"""``vignette leaderboard verify ENTRY --model SPEC``: re-ask a random subset and compare.

`validate` proves an entry's numbers follow from its responses; only re-asking shows the model gave
them. The subset is drawn with a seed from the sha256 of the entry file (which holds the responses'
sha256), so nobody can know it before submitting. Each chosen question is rebuilt with the runner's
own code from the entry's run settings and source (same pair image, wording and option order) and
put to the named model. Then:

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

The result is written as ``verifications/<entry_id>.json`` beside the entries folder (entry digest,
subset size, agreement, date, hardware, model spec); the board shows "verified" only while the
entry's digest still matches. The digest covers the whole entry except where the responses are
stored (their sha256 is covered), so publishing them elsewhere keeps the verification.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import platform
import sys
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from vignette_bench.eval.leaderboard.arguments import verify_add_arguments as add_arguments  # noqa: F401 (the parser lives in a light module)
from vignette_bench.eval.leaderboard.entry import EntryError, validate
from vignette_bench.formats.base import FormatError
from vignette_bench.formats.verification import Mismatch, Verification

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


def subset_seed(entry: dict) -> int:
    return int(entry_digest(entry)[:16], 16)


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
    entry_path: str | Path, model_spec: str, n: int = 50, batch_size: int = 8, adapter: Any = None
) -> Verification:
    from vignette_bench.eval.adapters.base import ChoiceRequest
    from vignette_bench.eval.runtime.questions import QuestionBuilder
    from vignette_bench.eval.runtime.run import build_adapter, open_pairs
    from vignette_bench.formats.run_record import RunSettings
    from vignette_bench.taxonomy import load_taxonomy

    entry_path = Path(entry_path)
    v = validate(entry_path)
    entry, frame = v.entry, v.responses
    run = {**(entry.get("run") or {}), "model": model_spec, "source": entry["dataset"]["source"]}
    settings = RunSettings.from_json(run, str(entry_path), "run")
    ids = np.array(sorted(frame["question_id"]))
    rng = np.random.default_rng(subset_seed(entry))
    chosen = set(rng.choice(ids, size=min(n, len(ids)), replace=False).tolist())
    recorded = frame.set_index("question_id").loc[sorted(chosen)]

    pairs = open_pairs(settings)
    taxonomy = load_taxonomy(pairs.taxonomy) if pairs.taxonomy else load_taxonomy()
    builder = QuestionBuilder(taxonomy, settings.seed, settings.paradigms, settings.variants)
    wanted_pairs = set(recorded["pair_id"])
    items = []
    for row in pairs.rows:
        if row["pair_id"] not in wanted_pairs:
            continue
        todo = [q for q in builder(row) if q.question_id in chosen]
        image = pairs.compose(row) if any(q.modality == "image" for q in todo) else None
        items += [(q, image if q.modality == "image" else None) for q in todo]
    if len(items) != len(chosen):
        raise EntryError(
            "run", f"rebuilt {len(items)} of the {len(chosen)} chosen questions from the source: the plan changed"
        )
    adapter = adapter or build_adapter(model_spec, settings.seed, batch_size)
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
        same = old_choice == new["choice"]
        if mode == "score":
            same, d, tie = score_agreement(
                list(rec["options"]),
                old_choice,
                new["choice"],
                rec.get("probabilities"),
                new["probabilities"],
                score_tol,
            )
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
        model_spec=model_spec,
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
    )


def _mismatch(m: dict[str, Any]) -> Mismatch:
    def choice(value: Any) -> str | None:
        return value if isinstance(value, str) else None  # an invalid answer has no choice

    return Mismatch(question_id=str(m["question_id"]), recorded=choice(m["recorded"]), re_asked=choice(m["re_asked"]))


def verification_path(entry_path: Path, entry_id: str) -> Path:
    return Path(entry_path).resolve().parent.parent / "verifications" / f"{entry_id}.json"


def load_verification(entry_path: Path, entry: dict) -> Verification | None:
    """The entry's verification record if it exists, reads, and was made for exactly this entry file."""
    path = verification_path(entry_path, entry["entry_id"])
    if not path.is_file():
        return None
    try:
        data = Verification.from_json(path.read_bytes(), str(path))
    except FormatError:
        return None  # an unreadable record verifies nothing
    if data.entry_digest != entry_digest(entry):
        return None  # the entry changed after it was verified
    return data


def main(args: argparse.Namespace) -> int:
    try:
        result = verify(args.entry, args.model, args.limit, args.batch_size)
    except EntryError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    path = verification_path(args.entry, result.entry_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(result.dumps())
    print(f"{'VERIFIED' if result.passed else 'FAILED'}  {args.entry}: {result.reason}; wrote {path}")
    return 0 if result.passed else 1
