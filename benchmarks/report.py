"""Report and leaderboard numbers under a null model, and the cost of a full-taxonomy report.

    python benchmarks/report.py [--seeds 10] [--skip-full]
    python benchmarks/report.py --demo demo_out   # only 3. (after `make demo`)

1. Null calibration: a uniform-random responder (vignette_bench/eval/report/simulate.py) over religion + age
   (21 identities), decision + perception + stereotype + factuality; for each seed, the share of
   identities whose verdict is "bias +"/"bias −" (Simes over families, BH over identities, 5 pp
   minimum effect), the share with global q < 0.05, the number of families with an exploratory
   per-family flag, and the decision bias magnitude (noise-corrected RMS) beside the old mean
   |S − 50|. Then the same with one planted identity.
2. Cost: simulate a run over all 167 identities (decision + stereotype, 2 activities, 2 terms) and
   time `numbers.compute` and the whole report (figures included), in one process.
3. With --demo DIR (a `vignette demo` output): `vignette report` on the demo's four runs in a fresh process
   per `--figures` setting, its CPU seconds (user + system, imports included; best of 3 and every try: the
   machine is shared), wall seconds, page size and figure count; the imports alone; then where the CPU of
   one default report goes in a warm process (reading, measure calls, run comparison, the rest).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pandas as pd  # noqa: E402

from vignette_bench.eval.analysis.numbers import compute, summaries  # noqa: E402
from vignette_bench.eval.report.build import verdicts  # noqa: E402
from vignette_bench.eval.report.simulate import SimSpec, simulate, write_run  # noqa: E402

DESIGN = dict(dimensions=("religion", "age"), genders=("female", "male"), n_activities=4, n_traits=8)


def null_rates(seeds: int, planted=()) -> pd.DataFrame:
    rows = []
    for seed in range(seeds):
        frame = simulate(SimSpec(seed=seed, planted=planted, **DESIGN))
        n = compute(frame, detail=False)
        v = verdicts(n.tests())
        flagged = n.selection[n.selection["q"] < 0.05].groupby("family").size()
        dec = n.selection[n.selection["family"] == "decision"]
        rows.append(
            {
                "seed": seed,
                "identities": len(v),
                "flagged_share": float(v["verdict"].str.startswith("bias").mean()),
                "q_share": float((v["q_global"] < 0.05).mean()),
                "families_with_a_flag": int((flagged > 0).sum()),
                "decision_bias_magnitude": summaries(frame)["decision"]["bias_magnitude"],
                "decision_old_magnitude": float((dec["value_paper"] - 50.0).abs().mean()),
            }
        )
    return pd.DataFrame(rows)


def _cpu_of(cmd: list[str]) -> float:
    """CPU seconds (user + system) of a child process."""
    import resource
    import subprocess

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def demo_cost(demo: Path, tries: int = 3) -> None:
    """Page size and CPU of `vignette report` on a demo's runs (targets: <= 1 MB and <= 3 s CPU), best of
    ``tries`` fresh processes per --figures setting (the machine is shared: the best is the least disturbed)."""
    import os

    runs = sorted(str(p) for p in demo.glob("runs/*/*") if (p / "responses.parquet").is_file())
    if not runs:
        sys.exit(f"{demo}: no runs/*/*/responses.parquet (run `vignette demo --out {demo}` first)")
    print(f"DEMO REPORT ({len(runs)} runs under {demo.name}/runs; load average {os.getloadavg()[0]:.1f}):")
    print(f"  figures   | CPU s (user+sys), best of {tries} | all tries        | wall s | report.html  | figures")
    for figures in ("none", "findings", "all"):
        cpus, walls = [], []
        for _ in range(tries):
            with tempfile.TemporaryDirectory() as tmp:
                t = time.perf_counter()
                cmd = [sys.executable, "-m", "vignette_bench", "report", *runs, "--out", tmp, "--figures", figures]
                cpus.append(_cpu_of(cmd))
                walls.append(time.perf_counter() - t)
                size = (Path(tmp) / "report.html").stat().st_size
                kinds = [p.suffix for p in (Path(tmp) / "figures").glob("*")]
        n_figs = f"{len(kinds)} ({kinds.count('.svg')} SVG)"
        tried = " ".join(f"{c:.2f}" for c in cpus)
        print(f"  {figures:9s} | {min(cpus):28.2f} | {tried:16s} | {min(walls):6.1f} | {size / 1e6:8.3f} MB | {n_figs}")
    probe = [sys.executable, "-c", "import vignette_bench.eval.report.command"]
    imports = min(_cpu_of(probe) for _ in range(tries))
    bare = min(_cpu_of([sys.executable, "-c", "import vignette_bench.stats"]) for _ in range(tries))
    print(
        f"  imports in a fresh process (best of {tries}, python start included): the report {imports:.2f} s, "
        f"of which vignette_bench.stats (scipy.stats, pandas, pyarrow) {bare:.2f} s"
    )
    breakdown(runs)


def breakdown(runs: list[str]) -> None:
    """Where the CPU of one default report goes, in this (warm) process: reading the runs, the measure calls
    (vignette_bench/stats/measures, one per family x dimension), the rest of the numbers, the run comparison
    and everything else (verdicts, findings, SVG, page)."""
    from vignette_bench.eval.analysis import compare, numbers
    from vignette_bench.eval.report.command import make_report
    from vignette_bench.eval.runs import load_run

    spent = {"measures": 0.0, "compare": 0.0, "read": 0.0}
    calls = {"measures": 0}

    def timed(key, fn):
        def run(*a, **k):
            t = time.process_time()
            try:
                return fn(*a, **k)
            finally:
                spent[key] += time.process_time() - t
                calls[key] = calls.get(key, 0) + 1

        return run

    originals = (numbers._call, compare.compare_frames)
    numbers._call = timed("measures", numbers._call)
    compare.compare_frames = timed("compare", compare.compare_frames)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            make_report(runs, tmp)  # warm: the measures' and taxonomy's first-use costs are not the report's
            spent.update(measures=0.0, compare=0.0)
            calls["measures"] = 0
            t = time.process_time()
            for r in runs:
                load_run(r)
            spent["read"] = time.process_time() - t
            t0, t1 = time.process_time(), None
            make_report(runs, tmp)
            t1 = time.process_time()
    finally:
        numbers._call, compare.compare_frames = originals
    total = t1 - t0
    rest = total - spent["measures"] - spent["compare"] - spent["read"]
    print(
        f"  one default report in a warm process: {total:.2f} s = read runs {spent['read']:.2f} + "
        f"{calls['measures']} measure calls {spent['measures']:.2f} + run comparison {spent['compare']:.2f} + "
        f"the rest (numbers' own work, detectable effects, verdicts, findings, SVG, page) {rest:.2f}"
    )


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--skip-full", action="store_true")
    p.add_argument("--demo", type=Path, help="a `vignette demo` output folder: measure its report's size and CPU")
    args = p.parse_args()
    if args.demo is not None:
        demo_cost(args.demo)
        return
    null = null_rates(args.seeds)
    print(f"NULL (uniform random, {args.seeds} seeds, {null['identities'].iloc[0]} identities):")
    print(
        f"  share of identities with a 'bias' verdict: mean {null['flagged_share'].mean():.3f}, "
        f"max {null['flagged_share'].max():.3f}; with global q < 0.05: mean {null['q_share'].mean():.3f}"
    )
    print(
        f"  seeds with any identity flagged (per-family q, exploratory): {(null['families_with_a_flag'] > 0).sum()} "
        f"/ {len(null)}"
    )
    print(
        f"  decision bias magnitude, pp: noise-corrected RMS mean {null['decision_bias_magnitude'].mean():.2f}; "
        f"old mean |S-50| {null['decision_old_magnitude'].mean():.2f}"
    )
    planted = null_rates(min(args.seeds, 3), planted=(("hindu", 0.7),))
    print(
        f"PLANTED (hindu chosen 70% when offered): decision bias magnitude mean "
        f"{planted['decision_bias_magnitude'].mean():.2f} pp; 'bias' verdict share mean "
        f"{planted['flagged_share'].mean():.3f}"
    )
    if args.skip_full:
        return
    from vignette_bench.eval.report.command import make_report
    from vignette_bench.eval.runs import load_run
    from vignette_bench.taxonomy import load_taxonomy

    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        run = write_run(
            Path(tmp) / "run",
            SimSpec(
                seed=1,
                dimensions=tuple(load_taxonomy().dimensions),
                n_activities=2,
                n_traits=2,
                paradigms=("decision", "stereotype"),
            ),
        )
        t_sim = time.perf_counter() - t
        rows = len(load_run(run).responses)
        t = time.perf_counter()
        compute(load_run(run).responses)
        t_numbers = time.perf_counter() - t
        t = time.perf_counter()
        make_report([run], Path(tmp) / "report")
        t_report = time.perf_counter() - t
        n_figs = len(list((Path(tmp) / "report" / "figures").glob("*")))
    print(
        f"FULL TAXONOMY: {rows:,} answers, 167 identities: simulate {t_sim:.1f} s, numbers {t_numbers:.1f} s, "
        f"whole report {t_report:.1f} s ({n_figs} figures; numbers are recomputed inside the report)"
    )


if __name__ == "__main__":
    main()
