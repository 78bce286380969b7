"""The report's sections: tables and figures from the metric numbers of one or more runs."""

from __future__ import annotations

import numpy as np
import pandas as pd

from vignette_bench.eval.analysis.numbers import FAMILY_DIRECTION, Numbers, compute, one_variant
from vignette_bench.eval.analysis.verdicts import (  # noqa: F401  (re-exported: tests and benchmarks import them here)
    BIAS_VERDICTS,
    CONFOUNDED,
    MARK,
    MIN_EFFECT,
    NOT_ROBUST,
    UNADJUSTED_NOTE,
    VERDICT_COLUMNS,
    VERDICTS,
    marked,
    verdicts,
)
from vignette_bench.eval.pages import figures as F
from vignette_bench.eval.pages import findings as FD
from vignette_bench.eval.pages import paper, svg
from vignette_bench.eval.pages.names import label_for, record_line, run_label, scrub
from vignette_bench.eval.pages.page import NOT_DRAWN, Figure, Section, fig_name, plural
from vignette_bench.eval.report.arguments import FIGURES
from vignette_bench.eval.runs import Run, index_digest, is_simulated, missing_paradigms, placeholder_renders

Q = F.SIG_Q

# One sign convention on every page: an identity's effect is + when it is favoured (chosen for a positive role,
# not for a negative one; recognised more often; favourable polarity) and − when disfavoured.
#
# `Numbers.selection` keeps each family's raw effect (selection − chance: for "who is struggling" a higher rate is
# unfavourable); the verdicts turn it to + = favoured (`Numbers.tests`). A table that shows effects beside the
# verdicts does the same here, so one identity's effect never changes sign between two tables of the report.

EFFECT_COLUMN = "effect (pp, + = favoured)"


def favour_sign(family: str) -> float:
    """+1 where a higher selection rate is favourable (and for factuality's accuracy), −1 where it is not."""
    return float(FAMILY_DIRECTION.get(family.split("/")[-1], 0) or 1)


def signed_effects(table: pd.DataFrame, family: str) -> pd.DataFrame:
    """``table``'s raw effect columns (effect, effect_low, effect_high: selection − chance, pp) as + = favoured,
    named so: the interval's ends swap where the sign flips."""
    if "effect" not in table:
        return table
    s = favour_sign(family)
    out = table.assign(effect=s * table["effect"])
    if {"effect_low", "effect_high"} <= set(table.columns):
        lo, hi = s * table["effect_low"], s * table["effect_high"]
        out = out.assign(effect_low=lo if s > 0 else hi, effect_high=hi if s > 0 else lo)
    names = {"effect": EFFECT_COLUMN, "effect_low": "effect CI low", "effect_high": "effect CI high"}
    return out.rename(columns=names)


def _order(dimension_identities: pd.Series) -> list[str]:
    """Taxonomy order for identities (a reader finds 'old' next to 'young')."""
    from vignette_bench.taxonomy import load_taxonomy

    rank = {i.name: k for k, i in enumerate(load_taxonomy().identities)}
    return sorted(dict.fromkeys(dimension_identities), key=lambda n: (rank.get(n, 10**6), n))


def _columns(names) -> list[str]:
    """Activities and trait terms in taxonomy order (high/low terms side by side), others after."""
    from vignette_bench.taxonomy import load_taxonomy

    tax = load_taxonomy()
    rank = {a.name: k for k, a in enumerate(tax.activities)}
    rank.update({t: 1000 + k for k, (t, _, _) in enumerate(tax.trait_terms)})
    return sorted(dict.fromkeys(names), key=lambda n: (rank.get(n, 10**6), str(n)))


def _matrix(frame: pd.DataFrame, rows: str, cols: str, value: str) -> pd.DataFrame:
    m = frame.pivot_table(index=rows, columns=cols, values=value, aggfunc="first")
    return m.reindex(index=_order(m.index), columns=_columns(m.columns) if cols == "context" else m.columns)


def _sig(frame: pd.DataFrame, rows: str, cols: str) -> pd.DataFrame:
    f = frame.assign(_s=(frame["q"] < Q).astype(float))
    # a cell never tested is not significant (NaN would turn True under astype(bool))
    return f.pivot_table(index=rows, columns=cols, values="_s", aggfunc="first").fillna(0.0) > 0.5


def _heat(s: Section, name: str, caption: str, matrix: pd.DataFrame, counts: pd.DataFrame | None = None, **kw) -> None:
    """Add a heatmap, or say why there is none (never an empty figure). ``counts``: answers per cell (same
    rows and columns); cells resting on fewer than `findings.MIN_CELL` answers are hatched, not coloured."""
    if matrix.size == 0 or not np.isfinite(matrix.to_numpy(dtype=float)).any():
        s.notes.append(f"{caption.split(':')[0]}: nothing to draw — no defined value in these answers")
        return
    if counts is not None:
        caption += (
            f"; numbers in cells: answers each rests on; hatched: fewer than {FD.MIN_CELL} answers (too few to mean "
            "anything)"
        )
    s.figures.append(Figure(name, caption, F.heatmap(matrix, counts=counts, min_count=FD.MIN_CELL, **kw)))


def _counts(counts: pd.DataFrame | None, family: str, dim: str, cols: str, m: pd.DataFrame) -> pd.DataFrame | None:
    """The answer counts behind matrix ``m`` (identity × ``cols``), or None when not known."""
    if counts is None:
        return None
    c = counts[(counts["family"] == family) & (counts["dimension"] == dim)]
    return c.pivot_table(index="identity", columns=cols, values="n", aggfunc="sum").reindex(
        index=m.index, columns=m.columns
    )


def group_runs(runs: list[Run], labels: dict[str, str] | None = None) -> dict[str, list[Run]]:
    """Runs of one model (e.g. identity_contrast + portraits) are read together, under the name a person
    reads (`names.label_for`: id@revision, `random (seed 0)`, a local folder's base name, or `--label`)."""
    keyed: dict[tuple[str, str], list[Run]] = {}
    for r in runs:
        label = label_for(r.record, r.path, labels)
        given = bool(labels) and str(r.path.resolve()) in (labels or {})
        # runs are one model when their recorded ids agree (or --label names them alike)
        keyed.setdefault((label, label if given else r.name), []).append(r)
    out: dict[str, list[Run]] = {}
    for (label, _), rs in keyed.items():
        name, k = label, 2
        while name in out:  # two different models with one readable name (two local folders called llava)
            name, k = f"{label} #{k}", k + 1
        out[name] = rs
    return out


def model_sections(
    name: str,
    runs: list[Run],
    numbers: Numbers,
    min_effect: float = MIN_EFFECT,
    verdict: pd.DataFrame | None = None,
    draw: bool = True,
    frame: pd.DataFrame | None = None,
) -> list[Section]:
    """The detail sections of one model; ``frame``: its runs' answers concatenated (when the caller has them)."""
    if frame is None:
        frame = pd.concat([r.responses for r in runs], ignore_index=True)
    head = Section(f"Model: {name}")
    head.notes += [scrub(f"{run_label(r.path)}: {p}", [r.path]) for r in runs for p in r.problems]
    if len(frame):
        head.notes += missing_paradigms(frame)
    if any(is_simulated(r) for r in runs):
        head.notes.append("simulated responses (vignette_bench/eval/simulate.py), not a model's answers")
    _, variant = one_variant(frame)
    if variant is not None:
        head.notes.append(
            f"these answers hold several wording variants; the tables measure one, {variant}, so that every "
            "question counts once and the paper's columns stay comparable (vignette_bench/eval/analysis/numbers.py one_variant)"
        )
    if any(placeholder_renders(r.record) for r in runs):
        head.notes.append("answers to placeholder images: the numbers show the pipeline, not a model's bias")
    head.notes += numbers.notes
    head.paragraphs.append(
        f"{len(frame):,} answers from {plural(len(runs), 'run folder')}: "
        + ", ".join(f"`{run_label(r.path)}`" for r in runs)
        + ". Selection is in percent of the times an identity was offered, side-balanced (the mean of its rate "
        "when shown left and when shown right) when both sides are seen. Tests are cluster-robust: answers that "
        "share a render (or a pair image) are one unit. **Verdicts** are per identity (see 'Verdicts'); every "
        f"per-family q < {Q} in the tables and figures is exploratory (per-family q; not a verdict). Columns ending "
        "in `_paper` reproduce the paper's computation (no side balancing, Fisher's test vs the other identities)."
    )
    head.items += [record_line(r.record, r.path) for r in runs]
    sections = [head]
    if frame.empty:
        return sections
    sections.append(rates_section(numbers, draw))
    counts = pairs = traits = None
    if draw:
        counts, pairs, traits = FD.cell_counts(frame), FD.pair_counts(frame), FD.trait_counts(frame)
    for family in numbers.families():
        sections += family_sections(family, numbers, draw, counts, pairs)
    if not numbers.polarity.empty:
        sections.append(polarity_section(numbers, draw, counts, traits))
    if verdict is None:
        verdict = verdicts(numbers.tests(), min_effect)
    sections.append(verdict_section(numbers, verdict, min_effect))
    sections.append(paper_section(numbers))
    sections.append(consistency_section(numbers, verdict, draw))
    for sec in sections:
        sec.anchor = fig_name(name, sec.title)
    return sections


def design_table(n: Numbers) -> pd.DataFrame:
    """Per family × dimension: how it was tested and what this run could find."""
    d = n.design
    return pd.DataFrame(
        {
            "family": d["family"],
            "dimension": d["dimension"],
            "answer mode": d["answer_mode"],
            "cluster unit": d["cluster_unit"],
            "side-balanced": [
                "yes" if b else f"no ({a} position-adjusted)" if a else "no"
                for b, a in zip(d["side_balanced"], d["n_position_adjusted"].fillna(0).astype(int))
            ],
            "identities tested": [f"{t}/{k}" for t, k in zip(d["n_tested"], d["n_identities"])],
            "clusters (median)": d["n_clusters"],
            "detectable effect (pp, median)": d["detectable_effect"],
            "magnitude (pp)": d["magnitude"],
            "magnitude CI": [
                _interval(lo, hi, _magnitude_bounds(f))
                for lo, hi, f in zip(d["magnitude_ci_low"], d["magnitude_ci_high"], d["family"])
            ],
            "refusal p": d["refusal_p_value"],
            "left choice": d["left_choice_rate"],
            "left share (%) range": [_interval(lo, hi) for lo, hi in zip(d["left_share_min"], d["left_share_max"])],
        }
    )


def _interval(lo, hi, bounds: tuple[float, float] | None = None) -> str:
    """ "[lo, hi]", clipped to ``bounds`` (what the quantity can be) when given."""
    if lo is None or hi is None or not (np.isfinite(float(lo)) and np.isfinite(float(hi))):
        return "–"
    lo, hi = float(lo), float(hi)
    if bounds is not None:
        lo, hi = float(np.clip(lo, *bounds)), float(np.clip(hi, *bounds))
    return f"[{lo:.1f}, {hi:.1f}]"


def _magnitude_bounds(family: str) -> tuple[float, float]:
    """A magnitude (RMS of effects) lies between 0 and the largest possible |effect| of its family."""
    return (0.0, FD.effect_bounds(family)[1])


def rates_section(n: Numbers, draw: bool = True) -> Section:
    s = Section("Refusals and position bias", level=3)
    t = n.rates
    s.tables.append(("Invalid/refusal rate and rate of choosing the left person (95% CI)", t))
    if len(n.design):
        s.paragraphs.append(
            "How each family was tested. *Detectable effect*: the effect (pp from chance; factuality: from the other "
            "identities' accuracy; stereotype: polarity) a test finds with 80% power at α = 0.05 at this run's size, "
            "median over identities — smaller true biases are likely missed. It comes from the design (offers, "
            "sides, clusters), with every answer at chance and independent, not from how much the answers varied: "
            "a model that always answers alike gets the same number as a random one, and answers that agree "
            "within a cluster make the real one larger (vignette_bench/eval/analysis/power.py). *Magnitude*: noise-corrected RMS of the "
            "identities' effects (pp; ≈ 0 for an unbiased model at any size) with its 95% CI. *Refusal p*: are "
            "refusal rates the same across identities (cluster permutation test)? A small p means refusals are not "
            "missing at random and the verdicts table says whether each verdict survives the refusal bounds. "
            "*Left share*: the range over identities of the share of offers where the identity stood left; "
            "side-balanced rates remove the model's side preference (left choice) from the identities' rates."
        )
        s.tables.append(
            (
                "Tests per family and dimension: answer mode, clusters, power, magnitude, refusals, position",
                design_table(n),
            )
        )
        uneven = n.design[pd.to_numeric(n.design["refusal_p_value"], errors="coerce") < Q]
        for r in uneven.itertuples(index=False):
            s.notes.append(
                f"{r.family} · {r.dimension}: refusal rates differ across identities (p = {float(r.refusal_p_value):.3g});"
                " refusals are not missing at random here"
            )
    inv = t.assign(label=t["family"])
    if not draw:
        s.notes.append(NOT_DRAWN)
        return s
    s.figures.append(
        Figure(
            fig_name(n.model, "refusal"),
            "Invalid or refused answers, by paradigm",
            F.rate_bars(
                inv,
                title="Refusal / invalid rate",
                value="invalid_rate",
                low="invalid_lo",
                high="invalid_hi",
                ref=None,
                xlabel="share of answers",
            ),
        )
    )
    two = inv.dropna(subset=["left_rate"])
    if two.empty:
        s.notes.append("no two-person questions with a valid answer: position bias cannot be measured")
    else:
        s.figures.append(
            Figure(
                fig_name(n.model, "position"),
                "Share of valid answers choosing the left person",
                F.rate_bars(
                    two,
                    title="Position bias (chose left)",
                    value="left_rate",
                    low="left_lo",
                    high="left_hi",
                    ref=0.5,
                    xlabel="share choosing the left person",
                ),
            )
        )
    return s


EXPLORATORY = "exploratory (per-family q; not a verdict)"


def family_sections(
    family: str,
    n: Numbers,
    draw: bool = True,
    counts: pd.DataFrame | None = None,
    pairs: pd.DataFrame | None = None,
) -> list[Section]:
    sel = n.selection[n.selection["family"] == family]
    if sel.empty:
        return [Section(f"{family}", level=3, notes=[f"{family}: no valid answers to measure"])]
    s = Section(f"{family}", level=3)
    two_way = family != "factuality"
    top = sel.sort_values("value").assign(significant=lambda d: d["q"] < Q)
    flagged = top[top["significant"]]
    de = pd.to_numeric(sel["detectable_effect"], errors="coerce")
    power = (
        f" At this run's size a test detects about {float(de.median()):.1f} pp (80% power, median over identities)."
        if de.notna().any()
        else " No identity could be tested (too few clusters)."
    )
    s.paragraphs.append(
        f"{plural(sel['identity'].nunique(), 'identity')}; {len(flagged)} differ from "
        + ("chance (50 %)" if two_way else "the other identities' accuracy")
        + f" at per-family BH q < {Q} ({EXPLORATORY}).{power} "
        + {
            1: "Higher is favourable (chosen for the positive role).",
            -1: "Higher is unfavourable.",
            0: "Higher means more often answered correctly.",
        }[FAMILY_DIRECTION.get(family.split("/")[-1], 0)]
    )
    cols = [
        "dimension",
        "identity",
        "value",
        "ci_low",
        "ci_high",
        "effect",
        "effect_low",
        "effect_high",
        "n_clusters",
        "p",
        "q",
        "detectable_effect",
        "position",
        "value_paper",
        "p_paper",
    ]
    if len(flagged):
        s.tables.append(
            (
                f"Identities with per-family q < {Q}, {EXPLORATORY}: selection % (side-balanced, or position-adjusted "
                "when seen on one side only: see position) with 95% CI, effect (+ = favoured) with its CI (pp), clusters, detectable "
                "effect (pp), and the paper's S and Fisher p",
                signed_effects(flagged[[c for c in cols if c in flagged]], family),
            )
        )
    if not draw:
        s.notes.append(NOT_DRAWN)
        return [s]
    cells = n.cells[n.cells["family"] == family]
    lo = n.log_odds[n.log_odds["family"] == family]
    pc = n.pair_comp[n.pair_comp["family"] == family]
    for dim in dict.fromkeys(sel["dimension"]):
        d_sel = sel[sel["dimension"] == dim]
        untestable = _untestable(d_sel)
        if untestable:
            s.notes.append(f"{family} · {dim}: {untestable} — not drawn")
            continue
        center = 50.0 if two_way else float(d_sel["value"].mean())  # factuality: the dimension's mean accuracy
        notes = {i: " *" for i in d_sel.loc[d_sel["q"] < Q, "identity"]}
        d_cells = cells[(cells["dimension"] == dim) & cells["value"].notna()]
        if not d_cells.empty:
            m = _matrix(d_cells, "identity", "context", "value")
            _heat(
                s,
                fig_name(n.model, family, dim, "selection"),
                f"{family} · {dim}: selection % by identity × context, pooled over sides (* per-family q < {Q}, "
                "exploratory; grey: not asked)",
                m,
                _counts(counts, family, dim, "context", m),
                title=f"{family} — {dim}: selection (%)",
                center=center,
                span=100.0 if not two_way else 50.0,
                limits=(0.0, 100.0),
                cbar_label=("selection % (50 = no bias)" if two_way else f"% right (centre {center:.0f} = mean)"),
                row_notes=notes,
            )
        d_lo = lo[(lo["dimension"] == dim) & lo["value"].notna()]
        if d_lo.empty or d_lo["context"].nunique() < 2:
            s.notes.append(f"{family} · {dim}: log-odds need answers in at least two contexts")
        else:
            m = _matrix(d_lo, "identity", "context", "value")
            _heat(
                s,
                fig_name(n.model, family, dim, "logodds"),
                f"{family} · {dim}: log-odds of selection in a context vs all others (dot: q < {Q}, {EXPLORATORY})",
                m,
                _counts(counts, family, dim, "context", m),
                title=f"{family} — {dim}: log-odds",
                center=0.0,
                span=3.0,
                cbar_label="log-odds ratio (0 = no bias)",
                significant=_sig(d_lo, "identity", "context"),
            )
        d_pc = pc[(pc["dimension"] == dim) & pc["value"].notna()]
        if family == "factuality":
            pass  # one identity is asked about: no partner effect to measure
        elif d_pc.empty:
            s.notes.append(
                f"{family} · {dim}: PairComp undefined — each identity met only one partner, so there "
                "is no 'with anyone else' to compare with"
            )
        else:
            m = _matrix(d_pc, "identity", "other", "value")
            both = _order(list(m.index) + list(m.columns))  # square: the same identities in the same order
            m = m.reindex(index=both, columns=both)
            _heat(
                s,
                fig_name(n.model, family, dim, "paircomp"),
                f"{family} · {dim}: PairComp(row, column) = selection of row with column − with anyone else, pp "
                f"(dot: q < {Q}, {EXPLORATORY})",
                m,
                _counts(pairs, family, dim, "other", m),
                title=f"{family} — {dim}: PairComp (pp)",
                center=0.0,
                span=50.0,
                cbar_label="percentage points (0 = partner makes no difference)",
                significant=_sig(d_pc, "identity", "other"),
            )
    return [s]


def _untestable(d_sel: pd.DataFrame) -> str:
    """Why a family × dimension is said in words rather than drawn ("" when it can be drawn)."""
    if d_sel["identity"].nunique() < 2:
        return "fewer than two identities: nothing to compare"
    flags = d_sel["flag"].fillna("") if "flag" in d_sel else pd.Series("", index=d_sel.index)
    if len(flags) and (flags != "").all():
        clusters = pd.to_numeric(d_sel["n_clusters"], errors="coerce")
        median = f" (median {float(clusters.median()):.0f} clusters per identity)" if clusters.notna().any() else ""
        return f"not testable: too few independent clusters{median}"
    return ""


def polarity_section(
    n: Numbers, draw: bool = True, counts: pd.DataFrame | None = None, trait_counts: pd.DataFrame | None = None
) -> Section:
    s = Section("stereotype: trait terms and polarity", level=3)
    p = n.polarity[n.polarity["value"].notna()]
    s.paragraphs.append(
        "Polarity = side-balanced selection for high-valence terms − for low-valence terms (pp); positive = "
        "favourable stereotype; 'overall' = the mean of the per-dimension nets, tested as one contrast (it enters "
        f"the verdicts). Per-trait-dimension dots are {EXPLORATORY}. The selection heatmap shows each trait term."
    )
    if not draw:
        s.notes.append(NOT_DRAWN)
        return s
    cells = n.cells[n.cells["family"] == "stereotype"]
    for dim in dict.fromkeys(n.polarity["dimension"]):
        d_cells = cells[(cells["dimension"] == dim) & cells["value"].notna()]
        if not d_cells.empty:
            m = _matrix(d_cells, "identity", "context", "value")
            _heat(
                s,
                fig_name(n.model, "stereotype", dim, "selection"),
                f"stereotype · {dim}: selection % by identity × trait term (grey: not asked)",
                m,
                _counts(counts, "stereotype", dim, "context", m),
                title=f"stereotype — {dim}: selection (%)",
                center=50.0,
                span=50.0,
                limits=(0.0, 100.0),
                cbar_label="selection % (50 = no bias)",
            )
        d = p[p["dimension"] == dim]
        if d.empty:
            s.notes.append(f"stereotype · {dim}: polarity undefined (no valid answers for both valences)")
            continue
        untestable = _untestable(d)
        if untestable:
            s.notes.append(f"stereotype · {dim}: polarity {untestable} — not drawn")
            continue
        m = _matrix(d, "identity", "trait_dimension", "value")
        _heat(
            s,
            fig_name(n.model, "polarity", dim),
            f"stereotype · {dim}: polarity by trait dimension (dot: q < {Q}, {EXPLORATORY})",
            m,
            _counts(trait_counts, "stereotype", dim, "trait_dimension", m),
            title=f"stereotype — {dim}: polarity (pp)",
            center=0.0,
            span=50.0,
            cbar_label="high − low valence selection, pp (0 = no bias)",
            significant=_sig(d, "identity", "trait_dimension"),
        )
    return s


def _robust_text(v) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "–"
    return "yes" if bool(v) else "no"


def _representativeness() -> dict[str, str]:
    """identity -> its visual representativeness in the packaged taxonomy (taxonomy.Identity)."""
    from vignette_bench.taxonomy import load_taxonomy

    return {i.name: i.visual_representativeness for i in load_taxonomy().identities}


def verdict_section(n: Numbers, verdict: pd.DataFrame, min_effect: float) -> Section:
    s = Section("Verdicts", level=3)
    if verdict.empty:
        s.notes.append("no identity-level tests in these runs: no verdicts")
        return s
    s.paragraphs.append(
        "One verdict per identity. Its families (factuality; perception struggle, capability, enjoyment, dislike; "
        "decision; stereotype polarity overall) are each tested cluster-robustly; the identity's global p is Simes "
        "over its tested families, q is Benjamini–Hochberg over all identities of this report. **bias +** / "
        f"**bias −**: q < {Q} and the deciding family (smallest p) shows |effect| ≥ {min_effect:g} pp "
        "(`--min-effect`); + = favoured (chosen for positive roles, not for negative ones; recognised more often; "
        "favourable polarity), − = disfavoured. **below minimum effect**: q < "
        f"{Q} but a smaller effect. **not testable**: no family had enough clusters. The effect, CI and sign come "
        "from the deciding family's own test; its 95% CI is unadjusted (the verdict also needs a few-cluster check, "
        "Simes and BH), so it can exclude 0 beside *no evidence of bias*. *Refusals robust*: whether the verdict holds when every refusal is "
        "scored as the most and least favourable answer (– when not computed); **bias (not robust to refusals)**: "
        "significant and large enough, but the refusal bounds can erase or reverse it, so no direction is claimed. "
        "**position-confounded**: the identity stood on one side only in the families that could test it, so its "
        "rate cannot be separated from the model's side preference (the original fixed-order pairing does this); "
        "no verdict. Family tests of identities seen on one side only are left out of the global p for the same reason, "
        "unless the side preference could be estimated from the family's other pairs: then the identity's rate is "
        "**position-adjusted** (a paired-comparison model with a side term; the rate against a partner of average "
        "strength with sides balanced) and it is tested. Where pairs were shown in one fixed order (the original "
        'design), each gender is tested apart ("<dimension> · <gender>"; "· both genders" is the equal-weight '
        "mean of the per-gender effects) and every rate is **partner- and side-balanced (side model)**: the rate "
        "against a partner of the median strength of the identity's partners (so one partner's real effect "
        "does not move it), sides balanced, from a paired-comparison model with a per-gender side term that must fit the gender's "
        "answers (else position-confounded, the note says why; docs/statistics.md). *Position*: how the deciding "
        "family handled sides (side-balanced, position-adjusted, partner- and side-balanced; – when sides are "
        "unknown). *A verdict needs*: the true effect a verdict finds with 80% probability on this design "
        "(through Simes, BH and the minimum effect)."
    )
    counts = verdict["verdict"].value_counts().reindex(VERDICTS).dropna().astype(int)
    s.tables.append(("Identities by verdict", counts.rename_axis("verdict").reset_index(name="identities")))
    visual = verdict["identity"].map(_representativeness()).fillna("")
    by_visual = pd.crosstab(visual.replace("", "unknown"), verdict["verdict"]).reindex(
        columns=[v for v in VERDICTS if v in set(verdict["verdict"])]
    )
    s.tables.append(
        (
            "Verdicts by visual representativeness of the identity (both LLM and human judged it depictable: "
            "representative; either unsure: ambiguous) — a finding should hold on the representative ones",
            by_visual.rename_axis("visual representativeness").reset_index(),
        )
    )
    table = pd.DataFrame(
        {
            "identity": verdict["identity"],
            "dimension": verdict["dimension"],
            "verdict": verdict["verdict"],
            "position": verdict["position"].fillna("").replace("", "–"),
            "p (global)": verdict["p_global"],
            "q (global)": verdict["q_global"],
            "deciding family": verdict["family"],
            "effect (pp, + = favoured)": verdict["effect"],
            "95% CI (unadjusted)": [
                marked(v, a, b, _interval(a, b))
                for v, a, b in verdict[["verdict", "ci_low", "ci_high"]].itertuples(index=False)
            ],
            "answer mode": verdict["answer_mode"],
            "clusters": verdict["n_clusters"],
            "detectable effect (pp)": verdict["detectable_effect"],
            "a verdict needs (pp)": verdict["needed_effect"]
            .astype(object)
            .mask(FD.beyond_possible(verdict), "none possible"),
            "refusals robust": [_robust_text(v) for v in verdict["robust"]],
            "visual representativeness": visual,
            "note": [
                a or b for a, b in zip(verdict["note"].fillna(""), verdict["reason"].fillna("").astype(str).str[:200])
            ],
        }
    )
    s.tables.append((f"Verdict per identity (minimum effect {min_effect:g} pp; {MARK}: {UNADJUSTED_NOTE})", table))
    return s


def paper_section(n: Numbers) -> Section:
    """The paper's pooled rate and test beside the report's rate, for every identity (`analysis.paper`)."""
    s = Section("The paper's numbers beside the report's", level=3)
    s.paragraphs.append(
        "The paper's method: an identity's pooled selection rate (its share of the answers where it was offered, "
        "sides and partners as they fell) and Fisher's exact test against the other identities' pooled counts. "
        f"Where an identity stood on one side in ≥ {paper.LOPSIDED:.0f}% of its answers that rate mixes identity "
        "with the model's side preference. The report's rate balances sides (and, where pairs were shown in one "
        "order, partners too: per gender, from a side model that must fit). Also written as selection.csv beside "
        "this page."
    )
    t = paper.table(n.selection)
    if t.empty:
        s.notes.append("no two-person answers with known sides: the paper's pooled rates equal the report's")
        return s
    s.tables.append(("Every identity: the paper's pooled rate and test, its left share, the report's rate", t))
    return s


def consistency_section(n: Numbers, verdict: pd.DataFrame | None = None, draw: bool = True) -> Section:
    """Paper §7.1 / Figure 3: the identity's advantage in every paradigm, beside its verdict."""
    s = Section("Consistency across paradigms", level=3)
    scores, sig = n.advantage()
    if scores.shape[1] < 2:
        s.notes.append(
            "fewer than two paradigms with identity-level results in these runs: consistency needs "
            "at least two (e.g. identity_contrast for perception/decision and portraits for stereotype)"
        )
        return s
    if verdict is None:
        verdict = verdicts(n.tests())
    label = verdict.drop_duplicates("identity").set_index("identity")["verdict"].reindex(scores.index).fillna("")
    s.paragraphs.append(
        "Advantage per paradigm, in percentage points, signed so that ↑ = advantaged: factuality accuracy minus the "
        "other identities' accuracy; perception capability/enjoyment selection minus 50 and 50 minus struggle/dislike "
        "selection, averaged; stereotype polarity; decision selection minus 50 (side-balanced). Rows are labelled "
        f"with the identity's verdict; dots mark per-family q < {Q}, {EXPLORATORY}."
    )
    if not draw:
        s.notes.append(NOT_DRAWN)
        return s
    t = n.tests()
    t = t[t["flag"].fillna("") == ""].assign(paradigm=lambda d: d["family"].str.split("/").str[0])
    tested = t.pivot_table(index="identity", columns="paradigm", values="p", aggfunc="count")
    s.figures.append(
        Figure(
            fig_name(n.model, "consistency"),
            "Advantage by identity and paradigm (↑ = advantaged, pp), labelled with each identity's verdict; numbers in "
            "cells (small views): families tested; hatched: no family of that paradigm could be tested (too few "
            "clusters), so its advantage is not drawn. Intervals: the per-family tables.",
            F.consistency(scores, sig, label, title="Consistency across paradigms", tested=tested),
        )
    )
    return s


def comparison_section(all_numbers: list[Numbers], draw: bool = True) -> Section:
    s = Section("Model comparison", anchor="model-comparison")
    rows = []
    for n in all_numbers:
        for r in n.design.itertuples(index=False):
            bounds = _magnitude_bounds(r.family)
            lo, hi = (FD._num(r.magnitude_ci_low), FD._num(r.magnitude_ci_high))
            rows.append(
                {
                    "model": n.model,
                    "paradigm": "stereotype (polarity)" if r.family == "stereotype" else r.family,
                    "dimension": r.dimension,
                    "value": float(r.magnitude) if r.magnitude is not None else np.nan,
                    "ci": _interval(lo, hi, bounds),
                    "answer_mode": r.answer_mode,
                    "low": float(np.clip(lo, *bounds)) if np.isfinite(lo) else np.nan,
                    "high": float(np.clip(hi, *bounds)) if np.isfinite(hi) else np.nan,
                    "bound": bounds[1],
                }
            )
    table = pd.DataFrame(rows)
    if table.empty or not table["value"].notna().any():
        s.notes.append("no identity-level results in any run: nothing to compare")
        return s
    table = table[table["value"].notna()]
    s.tables.append(
        (
            "Bias magnitude: noise-corrected RMS of the identities' effects (pp; two-way families: selection − 50, "
            "factuality: accuracy − the others', stereotype: polarity) with its 95% CI and answer mode. About 0 for "
            "an unbiased model at any sample size (the old mean |S − 50| was mostly noise). Lower is fairer.",
            table.drop(columns=["low", "high", "bound"]).rename(
                columns={"value": "magnitude (pp)", "ci": "95% CI", "answer_mode": "answer mode"}
            ),
        )
    )
    if draw:
        s.figures.append(
            Figure(
                "model-comparison",
                "Noise-corrected bias magnitude by paradigm and dimension, per model, each with its 95% CI (clipped to "
                "the possible range): a wide interval reaching far from 0 means too few answers, not bias",
                svg.model_comparison(
                    table, title="Model comparison: noise-corrected RMS with 95% CI (lower is fairer)"
                ),
            )
        )
    summary = pd.concat([n.rates.assign(model=n.model) for n in all_numbers], ignore_index=True)
    s.tables.append(
        ("Refusal and position bias per model", summary[["model", "family", "n", "invalid_rate", "left_rate"]])
    )
    return s


def run_comparisons(groups: dict[str, list[Run]], frames: dict[str, pd.DataFrame], draw: bool = True) -> list[Section]:
    """`vignette compare` of the first model against each other one, identity by identity."""
    from vignette_bench.eval.compare.comparison import compare_frames
    from vignette_bench.eval.compare.section import comparison_section as identity_comparison

    def digests(rs: list[Run]) -> set[str]:
        return {str(index_digest(r)) for r in rs}

    (first, *others) = list(groups)
    out = []
    for other in others:
        shared = digests(groups[first]) == digests(groups[other])
        why = "the runs read the same render index" if shared else "the runs read different render indexes"
        c = compare_frames(frames[first], frames[other], first, other, shared_clusters=shared, clusters_reason=why)
        section = identity_comparison(c, level=3, draw=draw)
        section.anchor = fig_name("compare", first, other)
        out.append(section)
    return out


def build(
    runs: list[Run],
    min_effect: float = MIN_EFFECT,
    labels: dict[str, str] | None = None,
    figures: str = "findings",
    tables: list[tuple[str, Numbers, pd.DataFrame]] | None = None,
) -> tuple[str, list[Section]]:
    """The report's sections: the findings of every model first, then (collapsed on the page) the model
    comparison, run comparisons and each model's details. ``figures``: "none", "findings" (forest plots and
    the model comparison) or "all" (every heatmap too; slower and larger). ``tables``: when given, each model's
    (name, numbers, verdicts) is appended to it (`report.tables` writes them as CSV beside the page)."""
    if figures not in FIGURES:
        raise ValueError(f"figures must be one of {FIGURES}, got {figures!r}")
    groups = group_runs(runs, labels)
    draw_findings, draw_all = figures != "none", figures == "all"
    tables = [] if tables is None else tables
    found: list[Section] = []
    details: list[Section] = []
    numbers = []
    frames = {}
    for name, rs in groups.items():
        frame = pd.concat([r.responses for r in rs], ignore_index=True)
        frames[name] = frame
        n = compute(frame, model=name, detail=draw_all)  # log-odds and PairComp are only drawn
        numbers.append(n)
        verdict = verdicts(n.tests(), min_effect)
        tables.append((name, n, verdict))
        sections = model_sections(name, rs, n, min_effect, verdict, draw_all, frame)
        details += sections
        if frame.empty:
            found.append(
                Section(
                    f"Findings: {name}",
                    kind="findings",
                    anchor=fig_name("findings", name),
                    items=["no answers in these runs: nothing was found"],
                    notes=[scrub(p, [r.path]) for r in rs for p in r.problems],
                    plain=[f"{name}: no answers in these runs"],
                    links=[("what is missing", sections[0].anchor)],
                )
            )
            continue
        by_title = {sec.title: sec.anchor for sec in sections}
        links = {
            "verdict table": by_title.get("Verdicts", ""),
            "refusals, position, power": by_title.get("Refusals and position bias", ""),
        }
        fams = n.families()
        if fams:
            links["per-family tables"] = by_title.get(fams[0], "")
        if len(groups) > 1:
            links["model comparison"] = "model-comparison"
        links["runs and notes"] = sections[0].anchor
        found.append(
            FD.findings_section(
                name,
                n,
                verdict,
                answers=len(frame),
                run_names=[run_label(r.path) for r in rs],
                min_effect=min_effect,
                placeholder=any(FD.run_placeholder(r) for r in rs),
                simulated=any(FD.run_simulated(r) for r in rs),
                variant=FD.measured_variant(frame),
                links={k: v for k, v in links.items() if v},
                draw=draw_findings,
                imported=[note for r in rs for note in FD.run_imported(r)],
            )
        )
    if len(numbers) > 1:
        details[0:0] = [comparison_section(numbers, draw_findings), *run_comparisons(groups, frames, draw_all)]
    title = "VIGNETTE report — " + ", ".join(groups)
    return title, found + details
