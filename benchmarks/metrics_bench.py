"""Benchmark the VIGNETTE metric modules: 10M simulated answers (time, peak memory) and the
speed-up over a straightforward row-by-row implementation on the same 1M answers.

    .venv/bin/python benchmarks/metrics_bench.py            # full run (10M + 1M)
    .venv/bin/python benchmarks/metrics_bench.py --rows 200000 --naive-rows 20000   # quick

Clusters are the pair images (`pair_id` -> group), as the report gives them when render keys are
absent; rows as clusters would make the cells grow with rows.

Each 10M measurement runs in a fresh subprocess so that its peak RSS (VmHWM) is its own.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
# The metric modules import the statistics library vignette_bench.stats; with this script's folder
# first on sys.path, benchmarks/loader_bench.py would shadow that package, so the repository goes first.
sys.path.insert(0, str(ROOT))
METRICS = ("selection_frequency", "log_odds", "pair_comp", "polarity")
DIMENSIONS = ("ability", "sociability", "morality", "agency", "politics", "status")


def simulate(
    n_rows: int,
    seed: int,
    n_identities: int = 200,
    n_activities: int = 75,
    n_terms: int = 60,
    questions_per_image: int = 60,
    renders: int = 0,
    sides: bool = False,
) -> pa.Table:
    """Uniform-random answers over a VIGNETTE-like design, as Arrow dictionary columns.

    Images show two different identities of a 20-identity dimension; each image is asked
    `questions_per_image` questions. Context = trait term (with direction and dimension), so the
    same table feeds all four metrics; the activity is kept in the image id. With `renders` > 0 each
    person of an image is one of that many renders of their identity, given as candidate_clusters: the
    modules then cluster by render, two-way (own x partner render). With `sides` each question gives its
    candidates' screen sides (candidate_sides: the first left), as the runner records them: the tests are then
    side-balanced (four components per target), not pooled over unknown sides (two).
    """
    rng = np.random.default_rng(seed)
    n_images = math.ceil(n_rows / questions_per_image)
    dim_size = 20
    left = rng.integers(0, n_identities, n_images)
    base = (left // dim_size) * dim_size
    right = base + (left - base + rng.integers(1, dim_size, n_images)) % dim_size
    image = np.repeat(np.arange(n_images), questions_per_image)[:n_rows]
    term = rng.integers(0, n_terms, n_rows)
    chose_left = rng.random(n_rows) < 0.5
    invalid = rng.random(n_rows) < 0.02
    lft, rgt = left[image], right[image]
    sel = np.where(chose_left, lft, rgt)
    ids = pa.array([f"identity_{i:03d}" for i in range(n_identities)] + [""])
    sel = np.where(invalid, n_identities, sel)
    cand = np.empty(2 * n_rows, dtype=np.int32)
    cand[0::2], cand[1::2] = lft, rgt
    terms = pa.array([f"term_{t:02d}" for t in range(n_terms)])
    extra = {}
    if renders:
        # render codes identity * renders + r, drawn per image and side
        ren = np.empty(2 * n_rows, dtype=np.int32)
        ren[0::2] = (lft * renders + rng.integers(0, renders, n_images)[image]).astype(np.int32)
        ren[1::2] = (rgt * renders + rng.integers(0, renders, n_images)[image]).astype(np.int32)
        names = pa.array([f"identity_{i:03d}/render_{r}" for i in range(n_identities) for r in range(renders)])
        extra["candidate_clusters"] = pa.ListArray.from_arrays(
            pa.array(np.arange(0, 2 * n_rows + 1, 2, dtype=np.int32)),
            pa.DictionaryArray.from_arrays(pa.array(ren), names),
        )
    if sides:
        extra["candidate_sides"] = pa.ListArray.from_arrays(
            pa.array(np.arange(0, 2 * n_rows + 1, 2, dtype=np.int32)),
            pa.DictionaryArray.from_arrays(
                pa.array(np.tile(np.array([0, 1], dtype=np.int32), n_rows)), pa.array(["left", "right"])
            ),
        )
    return pa.table(
        {
            **extra,
            "selected": pa.DictionaryArray.from_arrays(pa.array(sel.astype(np.int32)), ids),
            "candidates": pa.ListArray.from_arrays(
                pa.array(np.arange(0, 2 * n_rows + 1, 2, dtype=np.int32)),
                pa.DictionaryArray.from_arrays(pa.array(cand), ids),
            ),
            "context": pa.DictionaryArray.from_arrays(pa.array(term.astype(np.int32)), terms),
            "direction": pa.DictionaryArray.from_arrays(
                pa.array((term % 2).astype(np.int32)), pa.array(["high", "low"])
            ),
            "trait_dimension": pa.DictionaryArray.from_arrays(
                pa.array(((term // 2) % len(DIMENSIONS)).astype(np.int32)), pa.array(list(DIMENSIONS))
            ),
            "chose_left": pa.array(
                np.where(invalid, None, chose_left).tolist() if n_rows <= 10 else chose_left & ~invalid
            ),
            "pair_id": pa.DictionaryArray.from_arrays(
                pa.array((image % (n_images)).astype(np.int32)), pa.array([f"img{i}" for i in range(n_images)])
            ),
        }
    )


def load(name: str):
    import evaluate

    return evaluate.load(str(ROOT / "vignette_bench" / "metrics" / name))


def load_measure(name: str):
    """The measure class behind the evaluate module `name` (what the report and leaderboard use: no evaluate,
    hence no transformers/torch among the imports that peak RSS includes)."""
    import importlib

    from vignette_bench.stats.measure import Measure

    module = importlib.import_module(f"vignette_bench.stats.measures.{name}")
    cls = next(v for v in vars(module).values() if isinstance(v, type) and issubclass(v, Measure) and v is not Measure)
    return cls()


def peak_rss_mb() -> float:
    """This process's peak resident memory. VmHWM where Linux gives it: ru_maxrss survives exec, so a child
    would report its parent's peak at fork (here the simulated table: ~0.9 GB at 10M rows)."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(name: str, path: str, via: str = "evaluate") -> None:
    """Run one metric on a parquet file in this fresh process; print seconds and peak RSS as JSON."""
    metric = load(name) if via == "evaluate" else load_measure(name)
    if os.environ.get("VIGNETTE_BENCH_PLAIN_HEAP"):  # --heap-compare: glibc's default handling of freed blocks
        import contextlib

        from vignette_bench.stats import measure

        measure.reuse_freed_memory = contextlib.nullcontext  # type: ignore[assignment]
    rss0 = peak_rss_mb()
    faults0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t0, c0 = time.perf_counter(), time.process_time()
    result = metric.compute(data=path)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults0
    peak = peak_rss_mb()
    s = result["summary"]
    print(
        json.dumps(
            {
                "metric": name,
                "via": via,
                "seconds": seconds,
                "cpu_seconds": cpu,
                "minor_faults": faults,
                "peak_rss_mb": peak,
                "rss_after_imports_mb": rss0,
                "n_rows": s["n_rows"],
                "ci_method": s.get("ci_method"),
                "cluster_unit": s.get("cluster_unit"),
            }
        )
    )


def run_child(name: str, path: str, via: str, tree: Path = ROOT, plain_heap: bool = False) -> dict:
    """One measurement in a fresh process, by this tree's code or another's (`--base`: its own copy of this
    script, run with the tree as working directory and first on the path); `plain_heap`: without
    `reuse_freed_memory` (`--heap-compare`)."""
    script = tree / "benchmarks" / "metrics_bench.py"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(tree)}
    if plain_heap:
        env["VIGNETTE_BENCH_PLAIN_HEAP"] = "1"
    cmd = [sys.executable, str(script), "--child", name, path, "--via", via]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tree)
    if out.returncode:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def naive(selected: list, candidates: list, contexts: list) -> dict:
    """A straightforward row-by-row implementation of selection frequency and log-odds
    (dict counters, then scipy.stats.fisher_exact table by table): the baseline to beat."""
    from scipy import stats

    offered, chosen = defaultdict(int), defaultdict(int)
    for sel, cands, ctx in zip(selected, candidates, contexts):
        if not sel:
            continue
        for ident in cands:
            offered[(ident, ctx)] += 1
            if ident == sel:
                chosen[(ident, ctx)] += 1
    per_id_off, per_id_sel, per_id_rates = defaultdict(int), defaultdict(int), defaultdict(list)
    for (ident, ctx), n in offered.items():
        per_id_off[ident] += n
        per_id_sel[ident] += chosen[(ident, ctx)]
        per_id_rates[ident].append(100.0 * chosen[(ident, ctx)] / n)
    tot_off, tot_sel = sum(per_id_off.values()), sum(per_id_sel.values())
    sf = {}
    for ident in sorted(per_id_off):
        a, n = per_id_sel[ident], per_id_off[ident]
        p = stats.fisher_exact([[a, n - a], [tot_sel - a, (tot_off - tot_sel) - (n - a)]]).pvalue
        ci = stats.binomtest(a, n).proportion_ci(method="wilson")
        sf[ident] = (sum(per_id_rates[ident]) / len(per_id_rates[ident]), p, ci.low, ci.high)
    q = stats.false_discovery_control([v[1] for v in sf.values()])
    lo = {}
    for (ident, ctx), o_a in sorted(offered.items()):
        r_a = chosen[(ident, ctx)]
        o_n, r_n = per_id_off[ident] - o_a, per_id_sel[ident] - r_a
        value = math.log((r_a + 1) / (o_a - r_a + 1)) - math.log((r_n + 1) / (o_n - r_n + 1))
        lo[(ident, ctx)] = (value, stats.fisher_exact([[r_a, o_a - r_a], [r_n, o_n - r_n]]).pvalue)
    return {"sf": sf, "sf_q": q, "log_odds": lo}


def _timed(fn, repeats: int):
    walls, cpus, out = [], [], None
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return float(np.median(walls)), float(np.median(cpus)), out


def _check_same(sf: dict, lo: dict, ref: dict) -> None:
    """Same answers: the paper's estimates and p-values (the *_paper columns) agree to 1e-9."""
    ids = sf["identities"]
    for i, ident in enumerate(ids["identity"]):
        if ident not in ref["sf"]:  # never offered, or only in refused questions: flagged, not in the baseline
            assert ids["flag"][i] in ("no_valid_answers", "never_offered"), (ident, ids["flag"][i])
            continue
        s, p, _, _ = ref["sf"][ident]
        assert abs(ids["selection_frequency_paper"][i] - s) < 1e-9, ident
        assert abs(ids["p_value_paper"][i] - p) <= 1e-9 * max(p, 1e-300), ident
    cells = lo["cells"]
    for i in range(len(cells["identity"])):
        key = (cells["identity"][i], cells["context"][i])
        if key not in ref["log_odds"]:  # offered only in refused questions: flagged, not in the baseline
            assert cells["flag"][i] == "no_valid_answers", key
            continue
        v, p = ref["log_odds"][key]
        assert abs(cells["log_odds_paper"][i] - v) < 1e-9 and abs(cells["p_value_paper"][i] - p) <= 1e-9 * max(
            p, 1e-300
        )


def compare_naive(n_rows: int, seed: int, tmp: str) -> None:
    """Selection frequency + log-odds on the same answers, row by row vs the modules, in one run.

    Two starting points: the same parquet file on disk (end to end: both read it), and the same
    Python lists in memory. The fast side is the median of three runs (the machine is shared).
    """
    path = os.path.join(tmp, "naive.parquet")
    pq.write_table(simulate(n_rows, seed), path)  # pair_id: the modules cluster by pair image
    sf_metric, lo_metric = load("selection_frequency"), load("log_odds")

    def read_lists():
        t = pq.read_table(path, columns=["selected", "candidates", "context", "pair_id"])
        return (
            [("" if s is None else s) for s in t.column("selected").to_pylist()],
            t.column("candidates").to_pylist(),
            t.column("context").to_pylist(),
            t.column("pair_id").to_pylist(),
        )

    def naive_from_file():
        return naive(*read_lists()[:3])

    def fast_from_file():
        return sf_metric.compute(data=path), lo_metric.compute(data=path)

    selected, candidates, contexts, groups = read_lists()

    def fast_from_lists():
        return (
            sf_metric.compute(selected=selected, candidates=candidates, context=contexts, group=groups),
            lo_metric.compute(selected=selected, candidates=candidates, context=contexts, group=groups),
        )

    f_wall, f_cpu, (sf, lo) = _timed(fast_from_file, 3)
    l_wall, l_cpu, (sf2, lo2) = _timed(fast_from_lists, 3)
    n_wall, n_cpu, ref = _timed(naive_from_file, 1)
    _check_same(sf, lo, ref)
    _check_same(sf2, lo2, ref)
    print(
        f"row-by-row (paper's statistics only) vs modules (paper's + cluster-robust tests) on the same {n_rows:,} "
        "answers (selection_frequency + log_odds; the paper's columns agree to 1e-9):",
        flush=True,
    )
    print(f"  row-by-row from the parquet file: wall {n_wall:7.2f} s  cpu {n_cpu:7.2f} s", flush=True)
    print(
        f"  modules from the parquet file:    wall {f_wall:7.2f} s  cpu {f_cpu:7.2f} s  -> speed-up wall {n_wall / f_wall:5.1f}x, cpu {n_cpu / f_cpu:5.1f}x",
        flush=True,
    )
    print(
        f"  modules from Python lists:        wall {l_wall:7.2f} s  cpu {l_cpu:7.2f} s  (lists already in memory; the row-by-row side read them itself)",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--naive-rows", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--child", nargs=2)
    ap.add_argument(
        "--via",
        choices=("measure", "evaluate", "both"),
        default="both",
        help="run the measure classes (vignette_bench.stats.measures: what the report uses), the evaluate modules "
        "(the measures plus evaluate's imports: transformers, torch), or each",
    )
    ap.add_argument("--metrics", nargs="+", choices=METRICS, default=list(METRICS))
    ap.add_argument(
        "--renders",
        type=int,
        default=0,
        help="renders per identity given as candidate_clusters (two-way clustered tests); 0: clusters are pair images",
    )
    ap.add_argument(
        "--sides",
        action="store_true",
        help="give each candidate's screen side (candidate_sides), as runner output does: side-balanced tests",
    )
    ap.add_argument(
        "--base",
        type=Path,
        help="an older tree (e.g. from git archive) measured back to back with this one, on the same file",
    )
    ap.add_argument(
        "--heap-compare",
        action="store_true",
        help="also run this tree without stats.heap.reuse_freed_memory (glibc's default: freed large arrays "
        "unmapped, new ones faulted in afresh), back to back",
    )
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run each measurement this many times, the trees interleaved, and end with each one's CPU range "
        "(the benchmark machines' first touch of fresh memory varies by seconds between identical runs)",
    )
    args = ap.parse_args()
    if args.child:
        # a child runs one of the two (benchmarks/metrics_ab.py calls it without --via: the evaluate module)
        child(args.child[0], args.child[1], "evaluate" if args.via == "both" else args.via)
        return
    print(f"python {sys.version.split()[0]}, cpus {os.cpu_count()}, seed {args.seed}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "answers.parquet")
        t0 = time.perf_counter()
        # pair_id is the cluster (group), or with --renders each candidate's render (two-way)
        pq.write_table(simulate(args.rows, args.seed, renders=args.renders, sides=args.sides), path)
        print(
            f"simulated {args.rows:,} answers -> parquet in {time.perf_counter() - t0:.1f} s ({os.path.getsize(path) / 1e6:.0f} MB)",
            flush=True,
        )
        vias = ("measure", "evaluate") if args.via == "both" else (args.via,)
        trees = [("base", args.base.resolve(), False)] if args.base else []
        trees += [("plain", ROOT, True)] if args.heap_compare else []
        trees += [("now" if trees else "", ROOT, False)]
        runs: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
        for name, via in ((n, v) for n in args.metrics for v in vias):
            for _ in range(args.repeat):
                for label, tree, plain in trees:
                    r = run_child(name, path, via, tree, plain)
                    runs[name, via, label].append(r)
                    faults = f"  faults {r['minor_faults']:>9,}" if "minor_faults" in r else ""
                    print(
                        f"{name:20s} {via:8s} {label:5s} {r['n_rows']:>11,} answers  wall {r['seconds']:6.2f} s  cpu "
                        f"{r['cpu_seconds']:6.2f} s{faults}  peak RSS {r['peak_rss_mb']:6.0f} MB (after imports "
                        f"{r['rss_after_imports_mb']:.0f} MB)  [clusters: {r['cluster_unit']}; {r['ci_method']}]",
                        flush=True,
                    )
        if args.repeat > 1:
            print(f"ranges over {args.repeat} runs each:")
            for (name, via, label), rs in runs.items():
                cpu, peak = [r["cpu_seconds"] for r in rs], [r["peak_rss_mb"] for r in rs]
                print(
                    f"{name:20s} {via:8s} {label:5s} cpu {min(cpu):6.2f} - {max(cpu):6.2f} s (median "
                    f"{float(np.median(cpu)):.2f})  peak RSS {min(peak):6.0f} - {max(peak):6.0f} MB",
                    flush=True,
                )
        if args.naive_rows > 0:
            compare_naive(args.naive_rows, args.seed, tmp)


if __name__ == "__main__":
    main()
