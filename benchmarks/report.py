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
   per `--figures` setting, its CPU seconds (user + system, imports included), wall seconds, page size and
   figure count; then where the CPU goes in one process (imports, metric modules, numbers, the rest).
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


def demo_cost(demo: Path) -> None:
    """Page size and CPU of `vignette report` on a demo's runs (targets: <= 1 MB and <= 3 s CPU)."""
    import resource
    import subprocess

    runs = sorted(str(p) for p in demo.glob("runs/*/*") if (p / "responses.parquet").is_file())
    if not runs:
        sys.exit(f"{demo}: no runs/*/*/responses.parquet (run `vignette demo --out {demo}` first)")
    print(f"DEMO REPORT ({len(runs)} runs under {demo.name}/runs):")
    print("  figures   | CPU s (user+sys) | wall s | report.html  | figures")
    for figures in ("none", "findings", "all"):
        with tempfile.TemporaryDirectory() as tmp:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "vignette_bench", "report", *runs, "--out", tmp, "--figures", figures],
                check=True,
                capture_output=True,
            )
            wall = time.perf_counter() - t
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            size = (Path(tmp) / "report.html").stat().st_size
            n_figs = len(list((Path(tmp) / "figures").glob("*.png")))
        print(f"  {figures:9s} | {cpu:16.2f} | {wall:6.1f} | {size / 1e6:8.3f} MB | {n_figs}")
    probe = "import time; t = time.process_time(); import {}; print(time.process_time() - t)"
    cost = {
        m: float(
            subprocess.run([sys.executable, "-c", probe.format(m)], check=True, capture_output=True, text=True).stdout
        )
        for m in ("vignette_bench.eval.report.command", "evaluate")
    }
    print(
        f"  imports in a fresh process: the report {cost['vignette_bench.eval.report.command']:.2f} s, "
        f"evaluate (transformers, torch; the report no longer imports it) {cost['evaluate']:.2f} s"
    )
    from vignette_bench.eval.analysis.numbers import metric
    from vignette_bench.eval.report.command import make_report
    from vignette_bench.eval.runs import load_run

    t1 = time.process_time()
    for name in ("selection_frequency", "log_odds", "pair_comp", "polarity"):
        metric(name)  # the measure (vignette_bench/stats/measures), without evaluate
    t2 = time.process_time()
    loaded = [load_run(r) for r in runs]
    frames = {}
    for r in loaded:
        frames.setdefault(r.path.parent, []).append(r.responses)
    t3 = time.process_time()
    for parts in frames.values():
        compute(pd.concat(parts, ignore_index=True), detail=False)
    t4 = time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        make_report(runs, tmp)
    t5 = time.process_time()
    print(
        "  in one process (--figures findings): load the measures "
        f"{t2 - t1:.2f} s, read runs {t3 - t2:.2f} s, numbers {t4 - t3:.2f} s, whole report after that "
        f"{t5 - t4:.2f} s (numbers recomputed inside)"
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
        n_figs = len(list((Path(tmp) / "report" / "figures").glob("*.png")))
    print(
        f"FULL TAXONOMY: {rows:,} answers, 167 identities: simulate {t_sim:.1f} s, numbers {t_numbers:.1f} s, "
        f"whole report {t_report:.1f} s ({n_figs} figures; numbers are recomputed inside the report)"
    )


if __name__ == "__main__":
    main()
