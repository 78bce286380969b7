"""The runner's own cost: questions per second with the random responder, on one core.

With the random responder (no model) everything measured is the runner: building questions,
composing each pair image (two ranged reads + decode + seam blend, once per pair), mapping
answers to response rows, and appending them to the log (flushed per batch, fsync'ed at most every
second and at exit). The merge into responses.parquet is timed separately. Last, CPU ms per question
of whole runs (11,232 questions), now and as before issue 25 in the same run, and the profile's top five.

    .venv/bin/python benchmarks/runner_bench.py [--pairs 60] [--out /tmp/runner_bench] [--per-question-only]

Prints one table; wall and CPU time are both shown because the machine is shared (CPU time is
what this process used; wall time includes waiting for the other processes and the disk).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vignette_bench.dataset_builder.sample import build_sample  # noqa: E402
from vignette_bench.eval.runtime.merge import merge  # noqa: E402
from vignette_bench.eval.runtime.plan import open_pairs  # noqa: E402
from vignette_bench.eval.runtime.questions import Variants  # noqa: E402
from vignette_bench.eval.runtime.run import RunSettings, run  # noqa: E402


def measure(source: str, out: Path, config: str, pairs: int, variants: Variants, batch_size: int) -> dict:
    sample = None if config == "portraits" else pairs  # the sample source has 13 portrait pairs: take them all
    settings = RunSettings(source=source, config=config, model="random", seed=0, sample=sample, variants=variants)
    pair_source = open_pairs(settings)
    calls = {"compose": 0, "compose_s": 0.0}
    compose = pair_source.compose

    def counted(row):  # type: ignore[no-untyped-def]
        t = time.perf_counter()
        image = compose(row)
        calls["compose"] += 1
        calls["compose_s"] += time.perf_counter() - t
        return image

    pair_source.compose = counted
    run_dir = (
        out
        / f"{config}-{len(variants.paraphrases) * len(variants.option_styles) * len(variants.modalities)}v-{'+'.join(variants.modalities)}-b{batch_size}"
    )
    shutil.rmtree(run_dir, ignore_errors=True)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    result = run(settings, run_dir, source=pair_source, batch_size=batch_size, progress=False)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    t = time.perf_counter()
    merge(run_dir)
    merge_s = time.perf_counter() - t
    return {
        "config": config,
        "modality": "+".join(variants.modalities),
        "variants": len(variants.paraphrases) * len(variants.option_styles) * len(variants.modalities),
        "batch": batch_size,
        "pairs": len(pair_source.rows),
        "questions": result.asked,
        "compositions": calls["compose"],
        "loop_qps": result.asked / result.seconds,
        "cpu_qps": result.asked / cpu,
        "wall_qps": result.asked / wall,
        "compose_ms": 1000 * calls["compose_s"] / max(calls["compose"], 1),
        "merge_s": merge_s,
    }


def per_question(source: str, out: Path, rounds: int) -> None:
    """CPU ms per question of a whole `run` (start-up excluded: the pair source is open, imports done) on
    every pair of identity_contrast with every wording variant, batch 16, best of ``rounds``; beside it
    the same run as before issue 25 (fsync per batch, the final merge decoding the run's own part),
    interleaved; then the profile's top five (by own time) of one run."""
    import cProfile
    import pstats

    import vignette_bench.eval.runtime.run as run_module
    from vignette_bench.eval.runtime import runlog

    settings = RunSettings(source=source, config="identity_contrast", model="random", seed=0, variants=Variants.all())
    pair_source = open_pairs(settings)
    fsyncs = {"n": 0}
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        fsyncs["n"] += 1
        real_fsync(fd)

    os.fsync = counting_fsync  # type: ignore[assignment]

    def one(before: bool) -> tuple[float, float, int, int]:
        runlog.SYNC_EVERY_S, run_module.HELD_ROWS_MAX = (0.0, -1) if before else (1.0, 1_000_000)
        run_dir = out / ("per-question-before" if before else "per-question")
        shutil.rmtree(run_dir, ignore_errors=True)
        fsyncs["n"] = 0
        cpu0, wall0 = time.process_time(), time.perf_counter()
        result = run(settings, run_dir, source=pair_source, batch_size=16, progress=False)
        return time.process_time() - cpu0, time.perf_counter() - wall0, result.asked, fsyncs["n"]

    one(False)  # warm-up: render cache, question templates
    best: dict[bool, tuple[float, float, int, int]] = {}
    for _ in range(rounds):
        for before in (True, False):
            got = one(before)
            if before not in best or got[0] < best[before][0]:
                best[before] = got
    print(
        f"\nper question: identity_contrast, every pair of the sample source, every wording variant, batch 16; best of {rounds}"
    )
    for before, label in (
        (True, "before (fsync per batch, merge decodes own part)"),
        (False, "now (fsync <= 1/s + exit, merge from memory)"),
    ):
        cpu, wall, asked, n = best[before]
        print(
            f"  {label:<52} {asked} questions: {1000 * cpu / asked:.3f} ms CPU/question, {1000 * wall / asked:.3f} ms wall, {n} fsyncs"
        )
    profile = cProfile.Profile()
    runlog.SYNC_EVERY_S, run_module.HELD_ROWS_MAX = 1.0, 1_000_000
    shutil.rmtree(out / "per-question", ignore_errors=True)
    profile.runcall(run, settings, out / "per-question", source=pair_source, batch_size=16, progress=False)
    os.fsync = real_fsync  # type: ignore[assignment]
    stats = pstats.Stats(profile)
    total = sum(v[2] for v in stats.stats.values())  # type: ignore[attr-defined]
    top = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:5]  # type: ignore[attr-defined]
    print("  profile, top five by own time (of one profiled run; cProfile inflates Python-level calls):")
    for (file, line, name), (_, calls, own, cumulative, _) in top:
        where = f"{Path(file).name}:{line}({name})" if line else name
        print(f"    {own:6.3f} s own ({own / total:5.1%}), {cumulative:6.3f} s cumulative, {calls:>6} calls  {where}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pairs", type=int, default=60, help="identity_contrast pairs (balanced sample); portraits: all 13")
    p.add_argument("--out", type=Path, default=Path("/tmp/runner_bench"))
    p.add_argument("--rounds", type=int, default=3, help="per-question rounds (best kept)")
    p.add_argument("--per-question-only", action="store_true", help="only the CPU ms per question section")
    args = p.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    source = args.out / "source"
    if not (source / "renders" / "index.parquet").exists():
        build_sample(source)  # placeholder renders, 256x256 JPEG, composed to 672x336
    if args.per_question_only:
        per_question(str(source), args.out, args.rounds)
        return 0
    base, text, every = Variants(), Variants(modalities=("text",)), Variants.all()
    rows = [
        measure(str(source), args.out, config, args.pairs, variants, batch)
        for config in ("identity_contrast", "portraits")
        # text: the same questions with no image to compose, i.e. the runner's cost without vignette's
        for variants, batch in ((base, 16), (text, 16), (every, 16), (every, 256))
    ]
    print(f"runner with the random responder, one core ({os.cpu_count()} on the machine), pairs composed to 672x336")
    print(
        "| config | variants | modality | batch | pairs | questions | compositions | questions/s (loop, wall) | questions/CPU-s | compose ms/pair | merge s |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['config']} | {r['variants']} | {r['modality']} | {r['batch']} | {r['pairs']} | {r['questions']} | {r['compositions']} | "
            f"{r['loop_qps']:.0f} | {r['cpu_qps']:.0f} | {r['compose_ms']:.1f} | {r['merge_s']:.2f} |"
        )
    ok = all(r["compositions"] == (r["pairs"] if "image" in r["modality"] else 0) for r in rows)
    print(f"each pair composed once for all its questions: {ok}")
    print(
        f"slowest: {min(r['loop_qps'] for r in rows):.0f} questions/s wall, {min(r['cpu_qps'] for r in rows):.0f} questions/CPU-s (target >= 500)"
    )
    per_question(str(source), args.out, args.rounds)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
