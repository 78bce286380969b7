"""``vignette annotate score``: agreement between two or more annotators' files, in the paper's layout.

Renders (papers/002, table 9): per criterion and option, each annotator's count, the share of items
on which every annotator chose that option (the paper's per-option agreement %), and per criterion the
overall agreement % and Cohen's kappa (Fleiss' kappa for three or more annotators), each with a 95%
bootstrap CI over items. Visual cues are scored one by one as selected / not selected.
Pairs (table 10): per dimension and overall, pairs, distinguishable (every annotator said yes),
non-distinguishable (the rest), agreement % and kappa with CIs; plus how often each annotator matched
the label to the right person. Items an annotator did not answer are left out of that criterion
(``n_items`` says how many remain).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from vignette_bench.annotate.agreement import agreement_table
from vignette_bench.annotate.arguments import score_add_arguments as add_arguments  # noqa: F401 (the parser lives in a light module)
from vignette_bench.annotate.criteria import CRITERIA, VISUAL_CUES
from vignette_bench.formats.annotation import (
    AnnotationAnswers,
    AnnotationError,
    AnnotationItems,
    read_annotation_answers,
    read_annotation_items,
)


def load(manifest_path: Path, answer_paths: list[Path]) -> tuple[AnnotationItems, list[AnnotationAnswers]]:
    manifest = read_annotation_items(manifest_path)
    if manifest.kind not in CRITERIA:
        raise AnnotationError(
            f"{manifest_path}: not an items list of `vignette annotate export` (kind {manifest.kind!r}, items of "
            "objects with an 'id'); pass the items.json written beside the page"
        )
    if len(answer_paths) < 2:
        raise AnnotationError("give at least two annotators' answer files")
    files: list[AnnotationAnswers] = []
    seen: dict[str, Path] = {}
    items = {i.id for i in manifest.items}
    for path in answer_paths:
        data = read_annotation_answers(path)
        if data.export_id != manifest.export_id:
            raise AnnotationError(
                f"{path}: answers are for export {data.export_id!r}, not {manifest.export_id!r} ({manifest_path}); "
                "score files of one export together"
            )
        given = data.annotator
        who = given.strip().casefold()
        if not who:
            raise AnnotationError(f"{path}: no annotator id")
        if who != given:  # "Alice " and "alice" are one person: the id is compared stripped and casefolded
            print(f"note: {path}: annotator {given!r} read as {who!r}", file=sys.stderr)
        if who in seen:
            raise AnnotationError(f"{path}: annotator {who!r} also in {seen[who]}; keep one file per annotator")
        seen[who] = path
        unknown = sorted(set(data.answers) - items)
        if unknown:
            raise AnnotationError(f"{path}: {len(unknown)} answer(s) for items not in this export, e.g. {unknown[0]!r}")
        check_answers(path, data.answers, manifest.kind)
        files.append(data.model_copy(update={"annotator": who}))
    return manifest, files


def check_answers(path: Path, answers: dict[str, Any], kind: Any) -> None:
    """Every answer is one of its criterion's options (the cues: a list of known cues); all problems named."""
    criteria = {c.name: c for c in CRITERIA.get(kind, ())} if isinstance(kind, str) else {}
    problems: list[str] = []
    for item, given in answers.items():
        if not isinstance(given, dict):
            problems.append(f"item {item!r}: answers must be an object of criterion -> answer, got {given!r}")
            continue
        for name, value in given.items():
            criterion = criteria.get(name)
            if criterion is None:
                problems.append(f"item {item!r}: unknown criterion {name!r} (a {kind} export asks {sorted(criteria)})")
            elif criterion.options:
                if not isinstance(value, str) or value not in criterion.options:
                    problems.append(f"item {item!r}: {name} = {value!r}, expected one of {list(criterion.options)}")
            elif not isinstance(value, list) or any(v not in VISUAL_CUES for v in value):
                problems.append(f"item {item!r}: {name} = {value!r}, expected a list of {list(VISUAL_CUES)}")
    if problems:
        more = f"\n  … and {len(problems) - 20} more" if len(problems) > 20 else ""
        raise AnnotationError(
            f"{path}: {len(problems)} answer(s) the page cannot have saved:\n  " + "\n  ".join(problems[:20]) + more
        )


def _labels(manifest: AnnotationItems, files: list[AnnotationAnswers], criterion: str, ids: list[str]) -> np.ndarray:
    out = np.full((len(ids), len(files)), "", dtype=object)
    for j, f in enumerate(files):
        for i, item in enumerate(ids):
            value = f.answers.get(item, {}).get(criterion)
            out[i, j] = value if isinstance(value, str) else ""
    return out


def _cue_labels(files: list[AnnotationAnswers], cue: str, ids: list[str]) -> np.ndarray:
    out = np.full((len(ids), len(files)), "", dtype=object)
    for j, f in enumerate(files):
        for i, item in enumerate(ids):
            cues = f.answers.get(item, {}).get("cues")
            if isinstance(cues, list):
                out[i, j] = "selected" if cue in cues else "not selected"
    return out


def _pct(x: float) -> float:
    return round(100.0 * x, 1) if np.isfinite(x) else float("nan")


def _ci(pair: tuple[float, float], scale: float = 1.0) -> str:
    lo, hi = pair
    return "—" if not np.isfinite(lo) else f"[{lo * scale:.2f}, {hi * scale:.2f}]"


def render_table(manifest: AnnotationItems, files: list[AnnotationAnswers], seed: int = 0) -> pd.DataFrame:
    names = [f.annotator for f in files]
    rows = []
    blocks: list[tuple[str, str, np.ndarray, tuple[str, ...]]] = []
    for c in CRITERIA["renders"]:
        ids = [i.id for i in manifest.items if i.activity or not c.needs_activity]
        if c.options:
            blocks.append((c.name, c.name, _labels(manifest, files, c.name, ids), c.options))
        else:
            for cue in VISUAL_CUES:
                blocks.append(("cues", cue, _cue_labels(files, cue, ids), ("selected", "not selected")))
    for criterion, what, labels, options in blocks:
        t = agreement_table(labels, options, seed)
        shown = options[:1] if criterion == "cues" else options  # a cue: the "selected" row, as in the paper
        for k, option in enumerate(shown):
            row: dict[str, Any] = {"criterion": criterion, "response": what if criterion == "cues" else option}
            row.update({f"{n} count": t["counts"][k][j] for j, n in enumerate(names)})
            row["agreement on this response (%)"] = _pct(t["joint"][k])
            first = k == 0
            row["n_items"] = t["n_items"] if first else ""
            row["agreement (%)"] = _pct(t["agreement"]) if first else ""
            row["agreement 95% CI"] = _ci(t["agreement_ci"], 100.0) if first else ""
            row["kappa"] = round(float(t["kappa"]), 3) if first and np.isfinite(t["kappa"]) else ("—" if first else "")
            row["kappa 95% CI"] = _ci(t["kappa_ci"]) if first else ""
            rows.append(row)
    return pd.DataFrame(rows)


def pair_table(
    manifest: AnnotationItems, files: list[AnnotationAnswers], seed: int = 0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    items = manifest.items
    dims = sorted({i.dimension for i in items})
    rows = []
    for dim in [*dims, "Overall"]:
        ids = [i.id for i in items if dim == "Overall" or i.dimension == dim]
        labels = _labels(manifest, files, "distinguishable", ids)
        t = agreement_table(labels, ("yes", "no"), seed)
        complete = labels[(labels != "").all(axis=1)]
        yes = int((complete == "yes").all(axis=1).sum())
        rows.append(
            {
                "dimension": dim,
                "pairs": t["n_items"],
                "distinguishable": yes,
                "non-distinguishable": int(len(complete)) - yes,
                "agreement (%)": _pct(t["agreement"]),
                "agreement 95% CI": _ci(t["agreement_ci"], 100.0),
                "kappa": round(float(t["kappa"]), 3) if np.isfinite(t["kappa"]) else "—",
                "kappa 95% CI": _ci(t["kappa_ci"]),
            }
        )
    ids = [i.id for i in items]
    match = _labels(manifest, files, "match", ids)
    acc = []
    for j, f in enumerate(files):
        answered = match[:, j] != ""
        acc.append(
            {
                "annotator": f.annotator,
                "answered": int(answered.sum()),
                "matched the label to the right person (%)": _pct(float((match[answered, j] == "left").mean()))
                if answered.any()
                else float("nan"),
                "cannot tell (%)": _pct(float((match[answered, j] == "cannot tell").mean()))
                if answered.any()
                else float("nan"),
            }
        )
    return pd.DataFrame(rows), pd.DataFrame(acc)


def _markdown(frame: pd.DataFrame) -> str:
    cols = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join("" if v is None else str(v) for v in r) + " |" for r in frame.itertuples(index=False)]
    return "\n".join(lines)


def score(manifest_path: Path, answer_paths: list[Path], out: Path, seed: int = 0) -> Path:
    manifest, files = load(manifest_path, answer_paths)
    out.mkdir(parents=True, exist_ok=True)
    names = ", ".join(f.annotator for f in files)
    kappa_kind = "Cohen's" if len(files) == 2 else "Fleiss'"
    text = [f"# Human validation: {manifest.kind} (export {manifest.export_id}, annotators {names})", ""]
    text.append(
        f"Kappa: {kappa_kind}. CIs: 95% percentile bootstrap over items (2,000 resamples, seed {seed}). "
        "Items an annotator skipped are left out of that criterion."
    )
    if manifest.kind == "renders":
        table = render_table(manifest, files, seed)
        table.to_csv(out / "agreement.csv", index=False)
        text += ["", "## Generation quality (paper, table 9)", "", _markdown(table)]
    else:
        table, acc = pair_table(manifest, files, seed)
        table.to_csv(out / "agreement.csv", index=False)
        acc.to_csv(out / "matching.csv", index=False)
        text += [
            "",
            "## Distinguishable pairs (paper, table 10)",
            "",
            _markdown(table),
            "",
            "## Label matching",
            "",
            _markdown(acc),
        ]
    path = out / "agreement.md"
    path.write_text("\n".join(text) + "\n")
    return path


def main(args: argparse.Namespace) -> int:
    try:
        path = score(args.items, args.answers, args.out, args.seed)
    except AnnotationError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(path.read_text())
    return 0
