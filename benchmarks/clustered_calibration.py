"""Calibration of the cluster-robust test (vignette_bench.stats.clustered) against the naive one.

    .venv/bin/python benchmarks/clustered_calibration.py            # full grid (~2 min, one core)
    .venv/bin/python benchmarks/clustered_calibration.py --targets 300   # quicker, noisier
    .venv/bin/python benchmarks/clustered_calibration.py --crossed       # crossed renders, the modules (~2 min)

--crossed (issue 27): null answers from an identity-activity-contrast design in which the partner's
render recurs across an identity's render clusters (tests/metrics/crossed_null.py: render effects
sd 1.0, pair-image effects sd 1.1, left choice 0.31, 48 pair images per identity, 4 questions per
image), through the four metric modules with the default two-way (own x partner render)
clustering and with clustering="one_way", for 2, 3 and 12 identities and all identities of the
age (9) and nationality (26) dimensions. Monte-Carlo se from the spread over independent studies.

Null grid: cluster random effect sd 0 / 1.1 / 1.5 (logit) x left-choice probability 0.3 / 0.5 /
0.7 x size small (4-8 clusters per target) / medium (10-30) / large (40-60); 1-40 answers per
cluster, left shares 0.25-0.75 per target. Each grid cell pools four designs: side drawn per
answer (renders recurring on both sides) or fixed per cluster (pair images), 0/1 answers or
score mode (probabilities). Reported: the share of raw p < 0.05 among tested targets, with its
Monte-Carlo standard error, for

* cr2: the default (working-model CR2, Bell-McCaffrey df, estimated icc);
* cr2_icc0: classic CR2 / Bell-McCaffrey (independent-offers working model);
* cr1: G/(G-1) sandwich with t(G-1);
* naive: pooled share vs 0.5 as if answers were independent (binomial, normal approximation).

Then the power for planted side-balanced selection frequencies 0.6 and 0.7 (p_left 0.3).
The generator is the one of tests/stats/test_clustered.py.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.stats.test_clustered import (  # noqa: E402
    BALANCED,
    SIZES,
    effect_for,
    naive_binomial_p,
    simulate_cells,
)
from vignette_bench.stats.clustered import cluster_contrasts  # noqa: E402

METHODS = {"cr2": {}, "cr2_icc0": {"icc": 0.0}, "cr1": {"method": "cr1"}}
DESIGNS = [(side, score) for side in (False, True) for score in (False, True)]
RATE_HEAD = f"| {'cr2 (default)':>13} {'cr2_icc0':>12} {'cr1':>12} {'naive binom':>12}"


def rates(
    rng: np.random.Generator,
    n_targets: int,
    size: str,
    sd: float,
    p_left: float,
    planted: float | None,
    designs: list[tuple[bool, bool]] = DESIGNS,
) -> dict[str, tuple[float, int]]:
    hits: dict[str, list[np.ndarray]] = {k: [] for k in [*METHODS, "naive"]}
    for side_per_cluster, score in designs:
        effect = 0.0 if planted is None else effect_for(planted, p_left, sd, score)
        cells = simulate_cells(
            rng,
            n_targets=n_targets,
            clusters=SIZES[size],
            cluster_sd=sd,
            p_left=p_left,
            score=score,
            side_per_cluster=side_per_cluster,
            effect=effect,
        )
        for name, kw in METHODS.items():
            out = cluster_contrasts(cells, BALANCED, 0.5, **kw)
            hits[name].append((out.loc[out["flag"] == "", "p_value"] < 0.05).to_numpy())
        hits["naive"].append(naive_binomial_p(cells) < 0.05)
    return {k: (float(np.concatenate(v).mean()), len(np.concatenate(v))) for k, v in hits.items()}


def fmt(rate: float, n: int) -> str:
    return f"{rate:.3f}±{math.sqrt(max(rate * (1 - rate), 1e-12) / n):.3f}"


def rate_cells(r: dict[str, tuple[float, int]], names: tuple[str, ...] = ("cr2", "cr2_icc0", "cr1", "naive")) -> str:
    return "| " + " ".join(f"{fmt(*r[k]):>{13 if k == 'cr2' else 12}}" for k in names)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--targets", type=int, default=1000, help="targets per design and grid cell (x4 designs)")
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--crossed", action="store_true", help="the crossed-render table through the modules instead")
    ap.add_argument("--tests", type=int, default=600, help="--crossed: about this many identity tests per row")
    ap.add_argument(
        "--variants",
        default="",
        help="--crossed: comma-separated two-way variance settings to add as columns (cr2, cr2+wild, cr1; "
        "vignette_bench.stats.clustered.variance_setting)",
    )
    ap.add_argument("--only", default="", help="--crossed: these (identities x renders) rows instead, e.g. 3x6,3x12")
    args = ap.parse_args()
    if args.crossed:
        crossed(args.tests, args.seed, [v for v in args.variants.split(",") if v], args.only)
        return
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    print("False-positive rate, raw p < 0.05 (nominal 0.05; ± Monte-Carlo se); flagged targets excluded")
    print(f"{'sd':>4} {'p_left':>6} {'size':>6} {'n':>5} {RATE_HEAD} | ok")
    worst = 0.0
    for sd in (0.0, 1.1, 1.5):
        for p_left in (0.3, 0.5, 0.7):
            for size in SIZES:
                r = rates(rng, args.targets, size, sd, p_left, None)
                rate, n = r["cr2"]
                ok = rate <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / n)
                worst = max(worst, rate)
                print(f"{sd:>4} {p_left:>6} {size:>6} {n:>5} {rate_cells(r)} | {'yes' if ok else 'NO'}", flush=True)
    print(f"worst cr2 false-positive rate: {worst:.3f}")
    print()
    print("By design, small size (4-8 clusters per target), p_left 0.3 (the hardest cells)")
    print(f"{'sd':>4} {'side fixed per':>14} {'answers':>7} {'n':>5} {RATE_HEAD}")
    for sd in (1.1, 1.5):
        for side_per_cluster, score in DESIGNS:
            r = rates(rng, 4 * args.targets, "small", sd, 0.3, None, [(side_per_cluster, score)])
            where, kind = ("cluster" if side_per_cluster else "answer"), ("score" if score else "0/1")
            print(f"{sd:>4} {where:>14} {kind:>7} {r['cr2'][1]:>5} {rate_cells(r)}", flush=True)
    print()
    print("Power, raw p < 0.05, planted side-balanced selection frequency (p_left 0.3)")
    print(f"{'planted':>7} {'sd':>4} {'size':>6} | {'cr2 (default)':>13} {'cr1':>12} {'naive binom':>12}")
    for planted in (0.6, 0.7):
        for sd in (0.0, 1.1, 1.5):
            for size in SIZES:
                r = rates(rng, max(args.targets // 4, 50), size, sd, 0.3, planted)
                print(f"{planted:>7} {sd:>4} {size:>6} {rate_cells(r, ('cr2', 'cr1', 'naive'))}", flush=True)
    print(f"\n{time.perf_counter() - start:.0f} s")


CROSSED = [(2, 6), (2, 12), (3, 6), (12, 6), (9, 6), (26, 6)]  # (identities, renders per identity)


def crossed(tests: int, seed: int, variants: list[str], only: str = "") -> None:
    import evaluate
    import pandas as pd

    from tests.metrics.crossed_null import crossed_rows
    from vignette_bench.stats.clustered import variance_name, variance_setting

    settings = [("", {}), *((v, {}) for v in variants), ("", {"clustering": "one_way"})]
    heads = [f"two-way {variance_name()} (default)", *(f"two-way {v}" for v in variants), "one-way (own render)"]
    wanted = {tuple(int(x) for x in o.split("x")) for o in only.split(",") if o}

    modules = {
        "selection_frequency": ("identities", None),
        "pair_comp": ("pairs", None),
        "log_odds": ("cells", None),
        "polarity": ("scores", "overall"),
    }
    metric = {name: evaluate.load(str(ROOT / "metrics" / name)) for name in modules}
    start = time.perf_counter()
    print(
        "Crossed renders: raw p < 0.05 under the null (nominal 0.05), ± Monte-Carlo se over studies; flagged excluded"
    )
    print(f"{'ids':>3} {'renders':>7} {'studies':>7} {'module':>19} | " + " ".join(f"{h:>21}" for h in heads) + " | n")
    for k, (n_ids, renders) in enumerate(sorted(wanted) if wanted else CROSSED):
        studies = max(20, math.ceil(tests / n_ids)) if n_ids > 2 else tests
        rows = crossed_rows(seed + k, studies, n_ids, renders=renders)
        for name, (table, overall) in modules.items():
            if name == "pair_comp" and n_ids < 3:
                continue  # with two identities there are no "other partners"
            kw = (
                rows
                if name == "polarity"
                else {c: v for c, v in rows.items() if c not in ("direction", "trait_dimension")}
            )
            extra = {"refusal_permutations": 1} if name == "selection_frequency" else {}
            cells = []
            n = 0
            for setting, opts in settings:
                with variance_setting(setting):
                    d = pd.DataFrame(metric[name].compute(**kw, **extra, **opts)[table])
                if overall:
                    d = d[d["trait_dimension"] == overall]
                if n_ids == 2:
                    d = d[d["identity"].str.endswith("_0")]  # identity 1 mirrors identity 0
                d = d[d["flag"] == ""]
                hit = (d["p_value"] < 0.05).groupby(d["identity"].str.split("_").str[0]).mean()
                rate, se = float((d["p_value"] < 0.05).mean()), float(hit.std(ddof=1) / math.sqrt(len(hit)))
                cells.append(f"{rate:.3f} ± {se:.3f}")
                n = len(d)
            print(
                f"{n_ids:>3} {renders:>7} {studies:>7} {name:>19} | " + " ".join(f"{c:>21}" for c in cells) + f" | {n}",
                flush=True,
            )
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
