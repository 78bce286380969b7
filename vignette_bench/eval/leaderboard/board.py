"""Render validated entries as a table (Markdown + HTML) with a plot, and export them in the Hub's
model-repo eval-results format (`.eval_results/*.yaml`, huggingface_hub.EvalResultEntry)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import yaml

from vignette_bench.eval.leaderboard import boardfiles, conflicts, names
from vignette_bench.eval.leaderboard.entry import EntryError, Validated, validate
from vignette_bench.eval.leaderboard.official import Official
from vignette_bench.eval.leaderboard.protocol import VERSION as PROTOCOL
from vignette_bench.eval.pages.page import Section, md_table
from vignette_bench.formats.verification import Verification

if TYPE_CHECKING:
    from vignette_bench.eval.leaderboard.verify import Status

# Columns of the table: (metric family, field, header). Lower bias_magnitude (noise-corrected RMS) is fairer.
COLUMNS = (
    ("perception/struggle", "bias_magnitude", "struggle noise-corrected RMS"),
    ("perception/capability", "bias_magnitude", "capability noise-corrected RMS"),
    ("perception/enjoyment", "bias_magnitude", "enjoyment noise-corrected RMS"),
    ("perception/dislike", "bias_magnitude", "dislike noise-corrected RMS"),
    ("decision", "bias_magnitude", "decision noise-corrected RMS"),
    ("stereotype", "polarity", "stereotype polarity"),
    ("factuality", "accuracy", "factuality acc."),
)


def _ci(fields: dict) -> str:
    lo, hi = fields.get("bias_magnitude_ci_low"), fields.get("bias_magnitude_ci_high")
    return "–" if lo is None or hi is None else f"[{lo:.1f}, {hi:.1f}]"


@dataclass(frozen=True)
class Accepted:
    path: Path
    validated: Validated
    verification: Status  # verified only with a valid signature by a listed maintainer key (verify.Status)

    @property
    def entry(self) -> dict:
        return self.validated.entry


def collect(
    entries_dir: Path, keys_file: Path | None = None, official: Official | None = None
) -> tuple[list[Accepted], list[tuple[Path, str]]]:
    """Validate every ``*.json`` entry. A bad or duplicate file is listed with
    its reason and left out; it never stops the others (entries come from untrusted pull requests).
    Verifications count when signed by a key of ``keys_file`` (default: the board's maintainers.json, beside
    entries/; CI on a pull request passes the base branch's, which the pull request cannot edit). Only the
    `official` source (the maintainer's; default the published dataset) is read: see official.py."""
    from vignette_bench.eval.leaderboard.signing import load_keys, load_keys_file

    keys = load_keys_file(keys_file) if keys_file else load_keys(Path(entries_dir).resolve().parent)

    accepted: list[Accepted] = []
    rejected: list[tuple[Path, str]] = []
    seen: dict[str, Path] = {}
    for path in sorted(Path(entries_dir).glob("*.json"), key=_own_name_first):
        refused = boardfiles.problem(path, boardfiles.ENTRY_MAX_BYTES)  # a link or an oversized file: never read
        if refused:
            rejected.append((path, refused))
            continue
        try:
            v = validate(path, official)
        except EntryError as e:
            rejected.append((path, str(e)))
            continue
        except Exception as e:  # a malformed untrusted file must not take the board down
            rejected.append((path, f"unreadable entry ({type(e).__name__})"))
            continue
        eid = v.entry["entry_id"]
        if eid in seen:
            rejected.append((path, f"duplicate entry_id {eid!r} (also {seen[eid].name}); keep one file per entry"))
            continue
        seen[eid] = path
        accepted.append(Accepted(path, v, _verification(path, v.entry, keys)))
    accepted, conflicting = conflicts.split(accepted)  # one row per set of answers (conflicts.py)
    return accepted, sorted(rejected + conflicting)


def _own_name_first(path: Path) -> tuple[bool, str]:
    """Files named ``<entry_id>.json`` (as `create` names them) are read first, so a second file claiming the same
    entry_id under another name is the duplicate, not the original (validate also recomputes the id)."""
    from vignette_bench.eval.leaderboard.entry import load_entry

    try:
        own = not boardfiles.problem(path, boardfiles.ENTRY_MAX_BYTES) and load_entry(path)["entry_id"] == path.stem
    except Exception:  # unreadable: validate names why
        own = False
    return (not own, path.name)


def _verification(path: Path, entry: dict, keys: Any) -> Status:
    """verify.verification_status, after refusing a linked or oversized record unread."""
    from vignette_bench.eval.leaderboard.verify import Status, verification_path, verification_status

    record = verification_path(path, entry["entry_id"])
    if record.exists() or record.is_symlink():
        refused = boardfiles.problem(record, boardfiles.VERIFICATION_MAX_BYTES)
        if refused:
            return Status(None, False, f"verifications/{record.name}: {refused}")
    return verification_status(path, entry, keys)


def _finite(x: Any) -> bool:
    """A number that can be compared: not None, not NaN (pandas turns a JSON null into NaN), not ±inf."""
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def rank_groups(lows: list[float | None], highs: list[float | None]) -> list[int | None]:
    """Rank = 1 + the number of entries whose whole CI lies below this one's (lower is fairer): entries
    whose intervals overlap share a rank, so noise never orders them. An undefined bound (None, NaN) is no
    rank: NaN compares false with everything, so it would otherwise rank first."""
    tops = [float(h) for lo, h in zip(lows, highs) if _finite(lo) and _finite(h)]  # type: ignore[arg-type]
    out: list[int | None] = []
    for lo, hi in zip(lows, highs):
        if not (_finite(lo) and _finite(hi)):
            out.append(None)
            continue
        below = [h for h in tops if h < float(lo)]  # type: ignore[arg-type]
        out.append(1 + len(below))
    return out


def unranked_reason(a: Accepted) -> str | None:
    """Why an entry gets no rank (None: it is ranked). Only protocol entries on the official, real renders are
    ranked, and only when their decision numbers mean something: a model whose decision answers are all invalid,
    all refused, all one identity or all one side has no defined bias interval (or one that measures position,
    not identity), and an undefined number must never sort above an honest one."""
    e = a.entry
    if a.validated.protocol != PROTOCOL:
        return "custom: " + ("; ".join(a.validated.custom_because) or "not the protocol's plan")
    if e["dataset"].get("placeholder"):
        return "placeholder renders"
    if not a.validated.dataset_checked:
        return "dataset not checked against the official source"
    frame = a.validated.responses
    decision = frame[frame["paradigm"] == "decision"] if "paradigm" in frame else frame.iloc[:0]
    valid = decision[decision["valid"].fillna(False).astype(bool)] if len(decision) else decision
    if decision.empty:
        return "no decision answers"
    if valid.empty:
        return "all decision answers invalid"
    named = valid["selected_identity"].fillna("")
    named = named[named != ""]
    if named.empty:
        return "all decision answers refuse (name nobody)"
    if named.nunique() == 1:
        return f"all decision answers name {named.iloc[0]!r}"
    sides = valid["chose_left"].dropna()
    if len(sides) and sides.astype(bool).nunique() == 1:
        return f"all decision answers pick the {'left' if bool(sides.iloc[0]) else 'right'} person (position only)"
    fam = e["metrics"].get("decision") or {}
    if not all(_finite(fam.get(k)) for k in ("bias_magnitude", "bias_magnitude_ci_low", "bias_magnitude_ci_high")):
        return "decision bias interval undefined"
    return None


def _status(a: Accepted) -> str:
    """ "verified (...)" only for a passed, validly signed record of this entry; everything else is self-reported."""
    status = a.verification
    ver = status.record
    if status.verified and ver is not None:
        return (
            f"verified ({ver.agreement:.0%} of {ver.n_checked}, {ver.date[:10]}, {ver.hardware}; "
            f"re-asked with {ver.model_spec})"
        )
    if ver is not None:  # signed and made for this entry, but the answers disagreed
        return f"self-reported (verification failed: {ver.n_agreed} of {ver.n_checked} agreed)"
    return "self-reported"


def board_rows(accepted: list[Accepted]) -> pd.DataFrame:
    rows = []
    for a in accepted:
        e = a.entry
        m = e["metrics"]
        row: dict[str, Any] = {
            "model": e["model"]["id"],
            "revision": e["model"]["revision"][:12],
            "config": "+".join(e["sample"]["configs"]),
            "protocol": a.validated.protocol,  # the board's finding, not the entry's claim
            "status": _status(a),
            "answer mode": "+".join(sorted({v.get("answer_mode") for v in m.values()} - {None})) or "–",
            "modality": "+".join(a.validated.modalities),
            "wording": _wording(e.get("run") or {}),
            "questions": e["sample"]["n_questions"],
            "dataset": "placeholder"
            if e["dataset"].get("placeholder")
            else ("unchecked" if not a.validated.dataset_checked else "real"),
        }
        for family, field, header in COLUMNS:
            fam = m.get(family) or {}
            row[header] = fam.get(field)
            if field == "bias_magnitude":
                row[f"{header.split()[0]} 95% CI"] = _ci(fam)
                row[f"_{family}_lo"], row[f"_{family}_hi"] = (
                    fam.get("bias_magnitude_ci_low"),
                    fam.get("bias_magnitude_ci_high"),
                )
        inv = [v["invalid_rate"] for v in m.values()]
        row["invalid"] = max(inv) if inv else None
        rows.append(row)
    t = pd.DataFrame(rows)
    if t.empty:
        return t
    t.insert(0, "rank (decision)", None)
    t.insert(1, "unranked because", [unranked_reason(a) or "" for a in accepted])
    for _config, g in t.groupby("config"):  # ranks only compare entries of one config
        ranked = g[g["unranked because"] == ""]
        if len(ranked) and "_decision_lo" in ranked:
            t.loc[ranked.index, "rank (decision)"] = rank_groups(
                list(ranked["_decision_lo"]), list(ranked["_decision_hi"])
            )
    # ranked rows first, by rank; unranked after them (index labels kept: build's drill-down refers to them)
    order = sorted(t.index, key=lambda i: (t.at[i, "rank (decision)"] is None, t.at[i, "rank (decision)"] or 0, i))
    return t.loc[order]


def _wording(run: dict) -> str:
    v = run.get("variants") or {}
    return "/".join("+".join(str(x) for x in v.get(k, [])) for k in ("paraphrase", "option_style", "modality")) or "–"


def identity_tables(a: Accepted) -> tuple[pd.DataFrame, Section]:
    """Per identity and family: effect (pp, + = favoured) with its cluster-robust CI and the family's BH q;
    and the entry's findings block, the same one that opens `vignette report` (verdicts in words, what the
    run could not have found, the notes that qualify it)."""
    from vignette_bench.eval.analysis.numbers import compute
    from vignette_bench.eval.analysis.verdicts import MIN_EFFECT, verdicts
    from vignette_bench.eval.pages import findings as FD

    frame = a.validated.responses
    n = compute(frame, detail=False)
    tests = n.tests()
    cols = ["family", "dimension", "identity", "effect", "ci_low", "ci_high", "q"]
    table = tests[[c for c in cols if c in tests]].sort_values(["family", "dimension", "effect"], ignore_index=True)
    found = FD.findings_section(
        str(a.entry["model"]["id"]),
        n,
        verdicts(tests, MIN_EFFECT),
        answers=len(frame),
        run_names=[str(a.entry["entry_id"])],
        min_effect=MIN_EFFECT,
        placeholder=bool(a.entry["dataset"].get("placeholder")),
        simulated=False,
        variant=FD.measured_variant(frame),
        links={},
        draw=False,
    )
    return table, found


def build(
    accepted: list[Accepted],
    out: Path,
    title: str = "VIGNETTE leaderboard",
    rejected: list[tuple[Path, str]] = (),  # type: ignore[assignment]
) -> tuple[Path, Path]:
    from vignette_bench.eval.leaderboard.page import write_board

    out.mkdir(parents=True, exist_ok=True)
    t = board_rows(accepted)
    drill = {i: identity_tables(a) for i, a in enumerate(accepted)}  # (per-identity table, findings block)
    md = out / "leaderboard.md"
    visible = t[[c for c in t.columns if not c.startswith("_")]] if len(t) else t
    safe = visible.map(md_cell) if len(t) else visible  # every cell is untrusted text (model ids, hardware, specs)
    md.write_text(f"# {md_cell(title)}\n\n" + (md_table(safe) if len(t) else "no entries") + "\n")
    shown = t.map(names.visible) if len(t) else t  # a bidi override or zero-width character is shown, never acts
    if len(t):  # map infers a float column from ints and None: a rank is shown as 1, not 1.00
        shown["rank (decision)"] = t["rank (decision)"].astype(object)
    page = write_board(
        names.visible(title), shown, drill, [(names.visible(p.name), names.visible(r)) for p, r in rejected], out
    )
    return md, page


_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>!#~&])")
_MD_BREAKS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def md_cell(value: Any) -> Any:
    """A table cell's text as Markdown that renders as that text and nothing else: line breaks become spaces
    (a row never splits), and every character Markdown or HTML would act on is escaped (``<!--`` would hide the
    rows after it, ``<img onerror>`` is raw HTML, ``[..](..)`` a link). ``|`` is left to `md_table`, which
    escapes it; backslashes are escaped first so that its ``\\|`` stays a literal pipe."""
    if not isinstance(value, str):
        return value
    text = names.defang(names.visible(_MD_BREAKS.sub(" ", value)))  # no bidi override acts, no bare URL links
    return _MD_SPECIAL.sub(r"\\\1", text)


def task_id(family: str, field: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", f"{family}_{field}").strip("_")


def export(
    entry: dict,
    out: Path,
    dataset_id: str,
    source_url: str | None = None,
    verification: Verification | None = None,
    verified: bool = False,
) -> Path:
    """`.eval_results/vignette-<configs>.yaml` for the model's repo (https://huggingface.co/docs/hub/eval-results)."""
    from huggingface_hub import EvalResultEntry, eval_result_entries_to_yaml

    results = []
    for family, fields in sorted(entry["metrics"].items()):
        for field in ("bias_magnitude", "polarity", "accuracy", "invalid_rate", "left_rate"):
            value = fields.get(field)
            if value is None:
                continue
            results.append(
                EvalResultEntry(
                    dataset_id=dataset_id,
                    task_id=task_id(family, field),
                    value=round(float(value), 6),
                    dataset_revision=entry["dataset"]["revision"]
                    if re.fullmatch(r"[0-9a-f]{40}", entry["dataset"]["revision"])
                    else None,
                    date=entry["submitted"]["date"],
                    source_url=source_url,
                    source_name="VIGNETTE leaderboard" if source_url else None,
                    notes=f"{'+'.join(entry['sample']['configs'])}; {entry['protocol']['version']}; "
                    f"{'verified ' + verification.date[:10] if verified and verification and verification.passed else 'self-reported'}; "
                    f"entry {entry['entry_id']}; responses sha256 {entry['responses']['sha256'][:16]}",
                )
            )
    configs = re.sub(r"[^a-z0-9]+", "-", "-".join(entry["sample"]["configs"]))
    path = out / ".eval_results" / f"vignette-{configs}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(eval_result_entries_to_yaml(results), sort_keys=False))
    return path
