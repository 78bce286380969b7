"""Report and leaderboard numbers under a null model, and the cost of a full-taxonomy report.

    python benchmarks/report.py [--seeds 10] [--skip-full]
    python benchmarks/report.py --demo demo_out [--base DIR]   # only 3. (after `make demo`)
    python benchmarks/report.py --full [--base DIR]             # only 2.

--base DIR: an older tree (e.g. `mkdir DIR && git archive <commit> | tar -x -C DIR`) whose report is timed
back to back with this one, try by try, in fresh processes (run from DIR with PYTHONPATH=DIR, so its own code
is imported), so that both see the same load on a shared machine.

1. Null calibration: a uniform-random responder (vignette_bench/eval/simulate.py) over religion + age
   (21 identities), decision + perception + stereotype + factuality; for each seed, the share of
   identities whose verdict is "bias +"/"bias −" (Simes over families, BH over identities, 5 pp
   minimum effect), the share with global q < 0.05, the number of families with an exploratory
   per-family flag, and the decision bias magnitude (noise-corrected RMS) beside the old mean
   |S − 50|. Then the same with one planted identity.
2. Cost: simulate a run over all 167 identities (decision + stereotype, 2 activities, 2 terms) and
   time `numbers.compute` in this process, then `vignette report` on it in a fresh process per `--figures`
   setting (findings, all): CPU seconds (user + system, imports included), wall seconds, page size, figures.
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
from vignette_bench.eval.simulate import SimSpec, simulate, write_run  # noqa: E402

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


ROOT = Path(__file__).resolve().parents[1]


def _cpu_of(cmd: list[str], tree: Path = ROOT) -> float:
    """CPU seconds (user + system) of a child process running `tree`'s code (cwd and PYTHONPATH = tree)."""
    import os
    import resource
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, capture_output=True, cwd=tree, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _report_cost(runs: list[str], figures: str, tree: Path) -> tuple[float, float, int, list[str]]:
    """One fresh `vignette report` of `tree`: CPU s, wall s, report.html bytes, figure suffixes."""
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        cmd = [sys.executable, "-m", "vignette_bench", "report", *runs, "--out", tmp, "--figures", figures]
        cpu = _cpu_of(cmd, tree)
        wall = time.perf_counter() - t
        return (
            cpu,
            wall,
            (Path(tmp) / "report.html").stat().st_size,
            [p.suffix for p in (Path(tmp) / "figures").glob("*")],
        )


def _costs(runs: list[str], settings: tuple[str, ...], tries: int, base: Path | None) -> None:
    """Per --figures setting: best of `tries` fresh processes (the machine is shared: the best is the least
    disturbed), every try printed; with `base`, its report is timed right before each try of this one."""
    trees = ([("base", base)] if base else []) + [("this", ROOT)]
    print(
        f"  tree | figures   | CPU s (user+sys), best of {tries} | all tries        | wall s | report.html  | figures"
    )
    for figures in settings:
        tried: dict[str, list[tuple[float, float, int, list[str]]]] = {name: [] for name, _ in trees}
        for _ in range(tries):
            for name, tree in trees:
                tried[name].append(_report_cost(runs, figures, tree))
        for name, _ in trees:
            cpus = [c[0] for c in tried[name]]
            size, kinds = tried[name][-1][2], tried[name][-1][3]
            n_figs = f"{len(kinds)} ({kinds.count('.svg')} SVG)"
            every = " ".join(f"{c:.2f}" for c in cpus)
            wall = min(c[1] for c in tried[name])
            print(
                f"  {name:4s} | {figures:9s} | {min(cpus):28.2f} | {every:16s} | {wall:6.1f} | {size / 1e6:8.3f} MB | {n_figs}"
            )


def demo_cost(demo: Path, tries: int = 3, base: Path | None = None) -> None:
    """Page size and CPU of `vignette report` on a demo's runs (targets: <= 1 MB and <= 3 s CPU), best of
    ``tries`` fresh processes per --figures setting; with `base`, the base tree's report back to back."""
    import os

    runs = sorted(str(p.resolve()) for p in demo.glob("runs/*/*") if (p / "responses.parquet").is_file())
    if not runs:
        sys.exit(f"{demo}: no runs/*/*/responses.parquet (run `vignette demo --out {demo}` first)")
    print(f"DEMO REPORT ({len(runs)} runs under {demo.name}/runs; load average {os.getloadavg()[0]:.1f}):")
    _costs(runs, ("none", "findings", "all"), tries, base)
    for name, tree in ([("base", base)] if base else []) + [("this", ROOT)]:
        probe = [sys.executable, "-c", "import vignette_bench.eval.report.command"]
        imports = min(_cpu_of(probe, tree) for _ in range(tries))
        bare = min(_cpu_of([sys.executable, "-c", "import vignette_bench.stats"], tree) for _ in range(tries))
        print(
            f"  {name}: imports in a fresh process (best of {tries}, python start included): the report "
            f"{imports:.2f} s, of which vignette_bench.stats (pandas, pyarrow, scipy.special) {bare:.2f} s"
        )
    print(f"  (load average at the end {os.getloadavg()[0]:.1f})")
    breakdown(runs)


def breakdown(runs: list[str]) -> None:
    """Where the CPU of one default report goes, in this (warm) process: reading the runs, the measure calls
    (vignette_bench/stats/measures, one per family x dimension), the rest of the numbers, the run comparison
    and everything else (verdicts, findings, SVG, page)."""
    from vignette_bench.eval.analysis import numbers
    from vignette_bench.eval.compare import comparison as compare
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
    p.add_argument("--full", action="store_true", help="only the full-taxonomy cost (2.)")
    p.add_argument("--base", type=Path, help="an older tree to time back to back (see the module docstring)")
    args = p.parse_args()
    if args.base is not None and not (args.base / "vignette_bench").is_dir():
        sys.exit(f"--base {args.base}: no vignette_bench/ there (extract a commit with git archive)")
    if args.demo is not None:
        demo_cost(args.demo, base=args.base)
        return
    if args.full:
        full_cost(args.base)
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
    if not args.skip_full:
        full_cost(args.base)


def full_cost(base: Path | None, tries: int = 1) -> None:
    """The paper-scale target (<= 60 s, <= 5 MB): `vignette report` on a simulated run over all 167 identities
    and 8 dimensions, each --figures setting in a fresh process."""
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
        frame = load_run(run).responses
        t = time.process_time()
        compute(frame, detail=False)  # as the default page computes them (no per-cell log-odds, PairComp)
        t_numbers = time.process_time() - t
        print(
            f"FULL TAXONOMY: {len(frame):,} answers, {len(set(frame['identity_left']) | set(frame['identity_right']))} identities, "
            f"{frame['dimension'].nunique()} dimensions: simulated in {t_sim:.1f} s wall; numbers.compute "
            f"{t_numbers:.1f} s CPU in this process (detail=False, as the default page); the report in a fresh process:"
        )
        _costs([str(run)], ("findings", "all"), tries, base)


if __name__ == "__main__":
    main()
