"""The findings block that opens a report: per model, what was found, what could not have been, and why to
read it with care — in words a person understands in a minute, with a forest plot of the effects.

Everything here is read from the report's own numbers (`Numbers`, the verdict table of build.py); nothing
is recomputed. The per-cell answer counts for the heatmaps (`cell_counts`, `pair_counts`) come from the same
metric inputs as the numbers (`numbers.family_inputs`), so a cell says how many answers it rests on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from vignette_bench.eval.analysis.numbers import FAMILY_DIRECTION, WRONG, Numbers, family_inputs, one_variant
from vignette_bench.eval.analysis.verdicts import BIAS_VERDICTS, CONFOUNDED
from vignette_bench.eval.pages import paper, svg
from vignette_bench.eval.pages.page import Figure, Section, fig_name, plural
from vignette_bench.stats.position import POSITION_ADJUSTED

Q = 0.05
FOREST_ROWS = 10  # identities drawn in a findings forest plot; the verdict table lists them all
MIN_CELL = 10  # answers: a heatmap cell resting on fewer is hatched grey, not coloured
ROLE = {
    "struggle": "the one who struggles",
    "capability": "the capable one",
    "enjoyment": "the one who enjoys it",
    "dislike": "the one who dislikes it",
}


def effect_bounds(family: str) -> tuple[float, float]:
    """The possible range of a verdict's effect (pp): a two-way selection − 50 lies in [−50, 50]; an accuracy
    difference (factuality) or a polarity (stereotype) in [−100, 100]."""
    return (-100.0, 100.0) if family in ("factuality", "stereotype") else (-50.0, 50.0)


def direction_words(family: str, effect: float, dimension: str = "") -> str:
    """The verdict's direction in words, e.g. 'chosen more often as the one who struggles'
    (``effect`` signed + = favoured, as in `Numbers.tests`)."""
    sub = family.split("/")[-1]
    if sub == "factuality":
        others = f"the other {dimension} identities" if dimension else "the other identities"
        return f"recognised {'more' if effect > 0 else 'less'} often than {others}"
    if sub == "stereotype":
        return f"given {'favourable' if effect > 0 else 'unfavourable'} traits more often"
    raw = effect * (FAMILY_DIRECTION.get(sub, 1) or 1)  # back to selection − chance
    more = "more" if raw > 0 else "less"
    if sub == "decision":
        return f"chosen {more} often for the role"
    return f"chosen {more} often as {ROLE.get(sub, sub)}"


def clip_interval(lo: float, hi: float, family: str) -> tuple[float, float]:
    a, b = effect_bounds(family)
    return (float(np.clip(lo, a, b)), float(np.clip(hi, a, b)))


def _num(v) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return math.nan
    return f


def _robust(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "refusal bounds not computed"
    return "survives the refusal bounds" if bool(v) else "does not survive the refusal bounds"


def finding_line(row) -> str:
    """One verdict in words: identity, direction, effect with its CI, the families behind it, refusals."""
    lo, hi = clip_interval(_num(row["ci_low"]), _num(row["ci_high"]), row["family"])
    n_fam = int(row["n_families"]) if pd.notna(row["n_families"]) else 0
    label = "bias +" if row["verdict"] == "bias +" else "bias −" if row["verdict"] == "bias −" else row["verdict"]
    return (
        f"**{row['identity']}** ({row['dimension']}) — {label}: "
        f"{direction_words(row['family'], _num(row['effect']), row['dimension'])}, "
        f"{_num(row['effect']):+.1f} pp [{lo:.1f}, {hi:.1f}] (95% CI) in {row['family']}; "
        f"{n_fam} famil{'y' if n_fam == 1 else 'ies'} tested; {_robust(row['robust'])}"
        + ("; position-adjusted (seen on one side only)" if row.get("position") == POSITION_ADJUSTED else "")
        + (f"; {row['note']}" if str(row.get("note", "") or "") else "")
    )


def detectable_by_family(n: Numbers) -> tuple[list[str], list[str], list[str], int]:
    """What the run could have found, per paradigm (perception's four questions together): the detectable
    effect (pp, 80% power, median over its dimensions and identities; from the design under the null, see
    `power`) where it is below the largest possible effect; the paradigms where even the largest possible
    effect would likely be missed; those the design could test but whose answers did not vary, so no test
    was defined; and how many family × dimension cells the design could not test (too few clusters)."""
    d = n.design
    found: list[str] = []
    hopeless: list[str] = []
    constant: list[str] = []
    if d.empty:
        return found, hopeless, constant, 0
    de_all = pd.to_numeric(d["detectable_effect"], errors="coerce")
    confounded = pd.to_numeric(d.get("n_position_confounded", 0), errors="coerce")
    all_confounded = (confounded > 0) & (confounded >= pd.to_numeric(d["n_identities"], errors="coerce"))
    untested = int((de_all.isna() & ~all_confounded).sum())
    d = d.assign(paradigm=d["family"].str.split("/").str[0], de=de_all)
    for paradigm, g in d.groupby("paradigm", sort=False):
        de = g["de"].dropna()
        if de.empty:
            continue
        value, bound = float(de.median()), effect_bounds(str(paradigm))[1]
        if int(pd.to_numeric(g["n_tested"], errors="coerce").fillna(0).sum()) == 0:
            constant.append(str(paradigm))
        elif value >= bound:
            hopeless.append(str(paradigm))
        else:
            found.append(f"{paradigm} {value:.2g} pp" if value < 10 else f"{paradigm} {value:.0f} pp")
    return found, hopeless, constant, untested


def beyond_possible(verdict: pd.DataFrame) -> pd.Series:
    """Identities whose needed effect (`stats.verdict_power`) exceeds what their deciding family's effect can
    reach (`effect_bounds`): no possible effect would give them a verdict at this size."""
    need = pd.to_numeric(verdict["needed_effect"], errors="coerce")
    top = np.array([effect_bounds(str(f))[1] for f in verdict["family"].fillna("")], dtype=float)
    return pd.Series(need.to_numpy(float) > top, index=verdict.index)


def verdict_needs(verdict: pd.DataFrame | None) -> str:
    """What a verdict needs (`stats.verdict_power`): the true effect found with 80% probability through Simes,
    BH and the minimum effect, median and range over the tested identities for which some possible effect
    suffices, and how many need more than any effect can be ("" when none is tested)."""
    if verdict is None or "needed_effect" not in verdict:
        return ""
    beyond = beyond_possible(verdict)
    need = pd.to_numeric(verdict["needed_effect"], errors="coerce")[~beyond].dropna()
    none_possible = (
        f"{plural(int(beyond.sum()), 'identity')} no possible effect would reach a verdict at this size"
        if beyond.any()
        else ""
    )
    if need.empty:
        return f"for {none_possible}" if none_possible else ""
    spread = f", {need.min():.1f}–{need.max():.1f} pp by identity" if need.max() - need.min() >= 0.1 else ""
    return (
        f"effects smaller than about {need.median():.1f} pp for a verdict (the true effect a verdict finds with "
        f"80% probability on this design, through Simes, BH and the minimum effect: median{spread}; per identity "
        "in the verdict table)" + (f"; for {none_possible}" if none_possible else "")
    )


def could_not_find(n: Numbers, verdict: pd.DataFrame | None = None) -> str:
    """The 'could not have found' sentence of the findings."""
    found, hopeless, constant, untested = detectable_by_family(n)
    parts = [verdict_needs(verdict)] if verdict_needs(verdict) else []
    if found:
        parts.append(
            "effects smaller than "
            + " · ".join(found)
            + " (80% power of one family test at p < 0.05, median over identities; a floor from the design: "
            "answers at chance, independent; a verdict must also pass Simes across the identity's families and "
            "BH across identities, so it needs a larger effect)"
        )
    if hopeless:
        parts.append(f"in {', '.join(hopeless)}, any possible effect (too few answers at this size)")
    if constant:
        parts.append(f"anything in {', '.join(constant)} (the answers did not vary: no test is defined)")
    if untested:
        parts.append(f"anything in {untested} family × dimension cell(s) with too few clusters to test")
    d = n.design
    if "n_position_confounded" in d and len(d):
        none_tested = d[(d["n_position_confounded"] > 0) & (d["n_position_confounded"] >= d["n_identities"])]
        if len(none_tested):
            parts.append(
                f"anything in {len(none_tested)} family × dimension cell(s) where side and identity cannot be "
                "separated (every identity position-confounded)"
            )
    return "; ".join(parts) if parts else "nothing could be tested"


def caveats(
    n: Numbers, placeholder: bool, simulated: bool, variant: dict | None, imported: Sequence[str] = ()
) -> list[str]:
    """The notes under a model's findings; `imported`: the consequences an imported run's record names
    (what its source format could not say: `run_imported`)."""
    out = []
    if simulated:
        out.append("simulated responses (vignette_bench/eval/simulate.py), not a model's answers")
    if placeholder:
        out.append("answers to placeholder images: the numbers show the pipeline, not a model's bias")
    out += [f"imported answers: {note}" for note in dict.fromkeys(imported)]
    if any(note.startswith("stereotype: each identity has one portrait") for note in n.notes):
        out.append(
            "portrait confound: each identity has one portrait per gender, so a stereotype verdict is about that "
            "portrait, not the identity"
        )
    uneven = n.design[pd.to_numeric(n.design["refusal_p_value"], errors="coerce") < Q] if len(n.design) else None
    if uneven is not None and len(uneven):
        where = ", ".join(f"{r.family} · {r.dimension}" for r in uneven.itertuples(index=False))
        out.append(
            f"refusals not at random: refusal rates differ across identities in {where} (p < {Q}); "
            "each verdict says whether it survives the refusal bounds"
        )
    if variant is not None:
        out.append(
            "several wordings were asked; the numbers measure one: " + ", ".join(f"{k} {v}" for k, v in variant.items())
        )
    return out


def forest_rows(verdict: pd.DataFrame, limit: int = FOREST_ROWS) -> pd.DataFrame:
    """The identities a findings forest plot draws: verdicts first, then the smallest global q."""
    v = verdict[pd.to_numeric(verdict["effect"], errors="coerce").notna()]
    if v.empty:
        return v.assign(label=[], lo=[], hi=[])
    v = v.head(limit)
    clipped = [clip_interval(_num(a), _num(b), f) for a, b, f in zip(v["ci_low"], v["ci_high"], v["family"])]
    return v.assign(
        label=[f"{i} ({d}) · {f.split('/')[-1]}" for i, d, f in zip(v["identity"], v["dimension"], v["family"])],
        lo=[c[0] for c in clipped],
        hi=[c[1] for c in clipped],
    )


def findings_section(
    label: str,
    n: Numbers,
    verdict: pd.DataFrame,
    *,
    answers: int,
    run_names: Sequence[str],
    min_effect: float,
    placeholder: bool,
    simulated: bool,
    variant: dict | None,
    links: dict[str, str],
    draw: bool = True,
    imported: Sequence[str] = (),
) -> Section:
    """The findings of one model (see the module docstring); ``links``: words → anchor of a detail section."""
    s = Section(f"Findings: {label}", kind="findings", anchor=fig_name("findings", label))
    s.paragraphs.append(
        f"{answers:,} answers from {plural(len(run_names), 'run')}: {', '.join(run_names)}. A verdict needs global q < {Q} "
        f"(Simes over the identity's families, BH over identities) and |effect| ≥ {min_effect:g} pp; "
        "effects are signed + = favoured."
    )
    shown = verdict[verdict["verdict"].isin(BIAS_VERDICTS)]
    confounded = verdict[verdict["verdict"] == CONFOUNDED]
    smaller = verdict[verdict["verdict"] == "below minimum effect"]
    could = could_not_find(n, verdict)
    if shown.empty:
        below = f"; {len(smaller)} significant but below {min_effect:g} pp" if len(smaller) else ""
        tested = int((~verdict["verdict"].isin(["not testable", CONFOUNDED])).sum())
        s.items.append(
            f"**No identity reaches a verdict** ({tested} of {plural(len(verdict), 'identity')} testable{below})."
        )
    else:
        s.items += [finding_line(r) for _, r in shown.head(5).iterrows()]
        if len(shown) > 5:
            s.items.append(f"… and {plural(len(shown) - 5, 'more identity')} with a verdict (see the verdict table)")
        if len(smaller):
            s.items.append(f"{plural(len(smaller), 'more identity')} significant but below {min_effect:g} pp")
    adjusted = verdict[verdict["position"].fillna("") == POSITION_ADJUSTED] if "position" in verdict else verdict[:0]
    if len(adjusted):
        names = ", ".join(f"{r.identity} ({r.dimension})" for r in adjusted.head(5).itertuples(index=False))
        s.items.append(
            f"{plural(len(adjusted), 'identity')} seen on one side only, verdict on the position-adjusted rate (side "
            f"preference estimated from the other pairs): {names}" + (", …" if len(adjusted) > 5 else "")
        )
    reasons = confounded["reason"].fillna("") if "reason" in confounded else pd.Series("", index=confounded.index)
    plain = confounded[reasons == ""]
    if len(plain):
        names = ", ".join(f"{r.identity} ({r.dimension})" for r in plain.head(5).itertuples(index=False))
        s.items.append(
            f"{plural(len(plain), 'identity')} seen on one side only: position-confounded, no verdict ({names}"
            + (", …)" if len(plain) > 5 else ")")
        )
    for dim, g in confounded[reasons != ""].groupby("dimension", sort=False):
        why = g["reason"].iloc[0]
        s.items.append(f"{plural(len(g), 'identity')} of {dim}: position-confounded, no verdict — {why}")
    mixed = paper.confounded_sentence(n.selection)
    if mixed:
        s.items.append(mixed)
    s.paragraphs.append(f"**Could not have found:** {could}.")
    s.notes += caveats(n, placeholder, simulated, variant, imported)
    s.links = list(links.items())
    s.plain = [
        f"{label}: " + (_plain(s.items[0]) if shown.empty else f"{plural(len(shown), 'identity')} with a verdict")
    ]
    s.plain += ["  " + _plain(x) for x in s.items[(1 if shown.empty else 0) :]]
    if shown.empty:
        s.plain.append("  could not have found: " + could)
    rows = forest_rows(verdict)
    if draw and len(rows):
        caption = (
            f"{label}: effect of each identity in its deciding family (pp, + = favoured) with its unadjusted 95% CI, clipped to "
            f"the possible range; shaded: smaller than the minimum effect ({min_effect:g} pp); "
            f"{len(rows)} of {plural(len(verdict), 'identity')}, verdicts first, then the smallest q"
        )
        s.figures.append(
            Figure(
                fig_name(label, "forest"),
                caption,
                svg.forest(rows, min_effect=min_effect, title="effect per identity, unadjusted 95% CI"),
            )
        )
    elif not len(rows):
        s.items.append("no identity could be tested: nothing to draw")
    return s


def _plain(text: str) -> str:
    return text.replace("**", "")


def _valid(inputs: pd.DataFrame) -> pd.DataFrame:
    return inputs[inputs["selected"].fillna("").astype(str) != ""]


def cell_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """Valid answers per family × dimension × identity × context (what a selection or log-odds cell rests on)."""
    parts = []
    for family, inputs in family_inputs(frame).items():
        v = _valid(inputs)
        if v.empty:
            continue
        e = v[["dimension", "context", "candidates"]].explode("candidates")
        e = e[e["candidates"] != WRONG]
        g = e.groupby(["dimension", "candidates", "context"], sort=False).size().reset_index(name="n")
        parts.append(g.rename(columns={"candidates": "identity"}).assign(family=family))
    cols = ["family", "dimension", "identity", "context", "n"]
    return pd.concat(parts, ignore_index=True)[cols] if parts else pd.DataFrame(columns=cols)


def pair_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """Valid answers per family × dimension × (identity, other): what a PairComp cell rests on."""
    parts = []
    for family, inputs in family_inputs(frame).items():
        if family == "factuality":
            continue
        v = _valid(inputs)
        v = v[v["candidates"].map(len) == 2]
        if v.empty:
            continue
        a = [c[0] for c in v["candidates"]]
        b = [c[1] for c in v["candidates"]]
        both = pd.DataFrame({"dimension": list(v["dimension"]) * 2, "identity": a + b, "other": b + a})
        g = both.groupby(["dimension", "identity", "other"], sort=False).size().reset_index(name="n")
        parts.append(g.assign(family=family))
    cols = ["family", "dimension", "identity", "other", "n"]
    return pd.concat(parts, ignore_index=True)[cols] if parts else pd.DataFrame(columns=cols)


def trait_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """Valid stereotype answers per dimension × identity × trait dimension ('overall': all of them): what a
    polarity cell rests on."""
    cols = ["family", "dimension", "identity", "trait_dimension", "n"]
    inputs = family_inputs(frame).get("stereotype")
    if inputs is None:
        return pd.DataFrame(columns=cols)
    v = _valid(inputs)
    e = v[["dimension", "trait_dimension", "candidates"]].explode("candidates")
    g = e.groupby(["dimension", "candidates", "trait_dimension"], sort=False).size().reset_index(name="n")
    overall = g.groupby(["dimension", "candidates"], sort=False)["n"].sum().reset_index()
    g = pd.concat([g, overall.assign(trait_dimension="overall")], ignore_index=True)
    return g.rename(columns={"candidates": "identity"}).assign(family="stereotype")[cols]


def measured_variant(frame: pd.DataFrame) -> dict | None:
    return one_variant(frame)[1]


def run_simulated(run) -> bool:
    """Whether a run's record says it was simulated (read from the typed record, not Run.info)."""
    return bool(run.record is not None and run.record.simulated)


def run_imported(run) -> list[str]:
    """An imported run's consequences of what its format could not say (run.json `imported`), and
    which format it came from; [] for a run `vignette run` made."""
    imported = run.record.imported if run.record is not None else None
    if imported is None:
        return []
    return [f"from {imported.format} files (run.json `imported`)", *imported.consequences]


def run_placeholder(run) -> bool:
    """Whether a run answered placeholder renders (runs.placeholder_renders on its record)."""
    from vignette_bench.eval.runs import placeholder_renders

    return placeholder_renders(run.record)
