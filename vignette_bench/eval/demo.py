"""The offline demo behind `make demo`: placeholder source → questions → answers → metrics → report.

Everything runs on a CPU without a network: the renders are drawn placeholders (not FLUX
images) and the models are a seeded random responder and a tiny *untrained* LLaVA built
locally, so the numbers say nothing about any real model. They show the pipeline end to end.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from vignette_bench import cli_options as opt

BANNER = """\
================================================================================
 VIGNETTE demo — PLACEHOLDER IMAGES and UNTRAINED MODELS
 The images are drawn placeholders, not the benchmark's renders; the models are a
 seeded random responder and a tiny randomly initialised LLaVA. Nothing below
 measures the bias of any real model: it exercises the pipeline end to end.
================================================================================"""

REAL_RUN = """\
To run a real model on a GPU (the published renders, a balanced sample of 2000 pairs):
  vignette run --source vignette-bench/vignette --config identity_contrast \\
      --model "hf:llava-hf/llava-v1.6-mistral-7b-hf?mode=score&dtype=bfloat16&device=cuda" \\
      --sample 2000 --variants all --batch-size 32 --out runs/llava16/identity_contrast
  (many GPUs: torchrun --nproc-per-node 8 -m vignette_bench run ... ; then vignette merge RUN)
  vignette report runs/llava16/* --out report/llava16"""

METRICS = ("selection_frequency", "log_odds", "pair_comp", "polarity")
# The responses columns of an identity choice, named as the metric contract maps them (docs/FORMATS.md);
# factuality's target_identity/correct are left out: they switch selection_frequency to accuracy.
CHOICE_COLUMNS = (
    "selected_identity",
    "candidates",
    "context",
    "chose_left",
    "probabilities",
    "pair_id",
    "direction",
    "trait_dimension",
)
FACT_COLUMNS = ("target_identity", "correct", "context", "pair_id")
ROOT = Path(__file__).resolve().parents[1]


def _step(message: str) -> float:
    print(f"\n== {message}", flush=True)
    return time.perf_counter()


def build_source(out: Path) -> Path:
    """The placeholder sample source (`vignette build sample`), reused when already built."""
    from vignette_bench.dataset_builder.sample import build_sample

    source = out / "source"
    if not (source / "renders" / "index.parquet").exists():
        build_sample(source)
    return source


def run_models(source: Path, out: Path, tiny_pairs: int, random_pairs: int, seed: int) -> list[Path]:
    from vignette_bench.eval.runtime.questions import Variants
    from vignette_bench.eval.runtime.run import run
    from vignette_bench.formats.run_record import RunSettings

    runs = []
    plans = (
        # (model spec, folder, pairs per config, variants): every variant for the free random responder
        ("random", "random", random_pairs, Variants.all()),
        ("tiny:llava?mode=score", "tiny-llava", tiny_pairs, Variants()),
    )
    for spec, name, pairs, variants in plans:
        for config in ("identity_contrast", "portraits"):
            settings = RunSettings(
                source=str(source), config=config, model=spec, seed=seed, sample=pairs, variants=variants
            )
            run_dir = out / "runs" / name / config
            result = run(settings, run_dir, batch_size=16)
            print(
                f"   {name} / {config}: {result.asked} asked ({result.invalid} invalid), {result.skipped} already answered, "
                f"{result.pairs_composed} pair images composed, {result.seconds:.1f}s -> {result.responses}"
            )
            runs.append(run_dir)
    return runs


def compute_metrics(run_dirs: list[Path], out: Path) -> dict:
    """Each metric module loaded by absolute path (evaluate.load resolves relative paths against the cwd)."""
    import evaluate
    import pandas as pd

    from vignette_bench.eval.runtime.folder import RunFolder
    from vignette_bench.formats.responses import read_responses

    modules = {name: evaluate.load(str(ROOT / "metrics" / name)) for name in METRICS}
    summary: dict[str, dict] = {}
    for model_dir in sorted({d.parent for d in run_dirs}):
        frame = pd.concat([read_responses(RunFolder(d).responses_path) for d in run_dirs if d.parent == model_dir])
        per_model: dict[str, dict] = {}
        facts = frame[frame["paradigm"] == "factuality"]
        if not facts.empty:  # accuracy per identity asked about: selection frequency with target/correct
            per_model["selection_frequency/factuality"] = _summary(
                modules["selection_frequency"], facts[list(FACT_COLUMNS)]
            )
        for paradigm in ("perception", "decision", "stereotype"):
            rows = frame[frame["paradigm"] == paradigm]
            if rows.empty:
                continue
            for name in ("selection_frequency", "pair_comp", "log_odds") + (
                ("polarity",) if paradigm == "stereotype" else ()
            ):
                per_model[f"{name}/{paradigm}"] = _summary(modules[name], rows[list(CHOICE_COLUMNS)])
        summary[model_dir.name] = per_model
    path = out / "metrics.json"
    path.write_text(json.dumps(summary, indent=2))
    print(
        "   (BH keeps false findings at 5% per family: the random responder shows one now and then by chance;\n"
        "    the untrained LLaVA's findings are artefacts of its random weights, not social bias)"
    )
    for model, results in summary.items():
        print(f"   {model}:")
        for name, s in results.items():
            if "error" in s:
                print(f"     {name:32s} FAILED: {s['error']}")
            else:
                print(
                    f"     {name:32s} rows {s['n_rows']:>6}  valid {s['n_valid']:>6}  significant after BH {s['n_significant_bh']}"
                )
    return summary


def _summary(module, rows) -> dict:  # type: ignore[no-untyped-def]
    """The headline counts of one metric; a failing metric is reported (and fails the demo at the end), not hidden."""
    try:
        s = module.compute(data=rows)["summary"]
    except Exception as e:  # noqa: BLE001 - shown to the user and counted as a failure
        return {"error": f"{type(e).__name__}: {e}"}
    out = {k: s.get(k) for k in ("n_rows", "n_valid", "n_significant_raw", "n_significant_bh", "left_choice_rate")}
    if "n_significant_bh_chance" in s and "target_identity" not in rows:
        # Two-way choices: selection frequency's calibrated test is against chance (see its card).
        out["n_significant_bh"] = s["n_significant_bh_chance"]
    return out


NOTE = "> **Demo output: placeholder images and untrained models — not a measurement of any real model.**\n\n"


def write_report(run_dirs: list[Path], out: Path) -> Path:
    """The full report (vignette report), marked as demo output at the top of its Markdown."""
    from vignette_bench.eval.report.command import make_report

    markdown, html = make_report(run_dirs, out / "report")
    markdown.write_text(NOTE + markdown.read_text())
    return html


def print_findings(page: Path) -> None:
    """The report's findings (what opens the page), then where the page is: the last thing the demo says."""
    findings = page.parent / "findings.txt"
    print("\nFindings (placeholder images, untrained models — the pipeline, not a measurement):")
    for line in findings.read_text().splitlines() if findings.is_file() else ["(no findings written)"]:
        print(f"  {line}")
    print(f"\nOpen the report: {page}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    opt.out(parser, default="demo_out", help="folder for everything the demo writes (rerunning resumes)")
    parser.add_argument("--tiny-pairs", type=int, default=6, help="pairs per config for the tiny VLM")
    parser.add_argument("--random-pairs", type=int, default=12, help="pairs per config for the random responder")
    opt.seed(parser, help="seed of the runs (default 0)")


def main(args: argparse.Namespace) -> int:
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("VIGNETTE_TINY_DIR", str(out / "tiny_models"))  # keep the tiny model inside the demo folder
    print(BANNER)
    t0 = start = _step("1/4 placeholder sample source (vignette build sample)")
    source = build_source(out)
    print(f"   {source} ({time.perf_counter() - t0:.1f}s)")
    t0 = _step("2/4 questions -> answers (vignette run): random responder and tiny untrained LLaVA")
    run_dirs = run_models(source, out, args.tiny_pairs, args.random_pairs, args.seed)
    print(f"   ({time.perf_counter() - t0:.1f}s)")
    t0 = _step("3/4 metrics (evaluate modules under vignette_bench/metrics/)")
    metrics = compute_metrics(run_dirs, out)
    failed = [f"{m}/{n}" for m, results in metrics.items() for n, s in results.items() if "error" in s]
    print(f"   {out / 'metrics.json'} ({time.perf_counter() - t0:.1f}s)")
    t0 = _step("4/4 report (vignette report)")
    page = write_report(run_dirs, out)
    print(f"   {page} ({time.perf_counter() - t0:.1f}s)")
    print(f"\nDone in {time.perf_counter() - start:.0f}s. Reminder: placeholder images, untrained models.\n")
    print(REAL_RUN)
    print_findings(page)
    if failed:
        print(f"\nerror: {len(failed)} metric computation(s) failed: {', '.join(failed)} (see above)", file=sys.stderr)
        return 2
    return 0
