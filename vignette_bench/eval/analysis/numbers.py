"""The report's numbers, all from the measures behind the metric modules (vignette_bench/stats/measures/<name>.py).

This module only maps the responses parquet onto the metric input contract (docs/FORMATS.md)
and reshapes the modules' outputs into tidy tables; the statistics (rates, Fisher tests,
Benjamini–Hochberg, intervals) are the modules' own.

Families of questions, each measured separately (their selections mean different things):
``factuality`` (right answers, by the identity asked about), ``perception/<subtask>``
(struggle, capability, enjoyment, dislike), ``decision`` (the six role dimensions pooled) and
``stereotype`` (trait terms; polarity). Each family is measured per dimension, because
identities compete only with identities of their own dimension; BH runs within that call.

Dependence and sides (issue 12): every candidate's offer carries its side (``candidate_sides``,
from identity_left/identity_right) and its independent unit (``candidate_clusters``: the render
of that person, so answers sharing a render or a pair image are not counted as independent). The
modules test side-balanced rates cluster-robustly; the report's verdicts combine their p-values
per identity (build.py). The detectable effect of each test is the report's own, from the design under
the null (`power`), not the modules' (from the observed se). Factuality is the one test made here (`_accuracy_contrasts`): a module
tests an identity against chance, but factuality's question is whether an identity is recognised
less often than the others of its dimension.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import cache

import numpy as np
import pandas as pd

from vignette_bench.eval.analysis import power, stratified
from vignette_bench.stats.clustered import cluster_contrasts, label_permutation_check
from vignette_bench.stats.multiplicity import noise_corrected_magnitude

WRONG = "(wrong answer)"  # pseudo-candidate for a factuality answer that is valid but wrong
# +1: being chosen is favourable, -1: unfavourable, 0: accuracy (factuality)
FAMILY_DIRECTION = {"capability": 1, "enjoyment": 1, "struggle": -1, "dislike": -1, "decision": 1, "factuality": 0}
Q = 0.05
# The wording variant the tables measure when a run asked several (vignette_bench/eval/runtime/questions.py Variants).
VARIANT_COLUMNS = ("modality", "option_style", "paraphrase")
PRIMARY_VARIANT = ("image", "identity", 0)


@cache
def metric(name: str):
    """The measure `name` itself (vignette_bench/stats/measures/<name>.py), not its evaluate module:
    importing evaluate costs seconds (it imports transformers and torch) and adds nothing here.
    The evaluate modules are thin shells over these classes, so the numbers are the same."""
    import importlib

    module = importlib.import_module(f"vignette_bench.stats.measures.{name}")
    (cls,) = (c for n, c in vars(module).items() if n.endswith("Measure") and c.__module__ == module.__name__)
    return cls()


def _pct(x) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x) / 100.0


def one_variant(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict | None]:
    """The rows of one wording variant, and which one (None when the run asked only one).

    Answers to several wordings of one question about one image are not independent. The
    cluster-robust tests would now absorb that (rewordings share the candidates' clusters), so
    pooling would no longer shrink p-values; the rule is kept anyway because pooling would still
    weight each question by how many wordings it got, would mix in the text-only form (which
    measures the language model alone, not the image), and would make `*_paper` columns differ
    from the paper's one-wording numbers. So the tables measure one variant: the primary one
    (image, options named by identity, the paper's wording) when the run has it, otherwise the
    first present; compare variants run by run.
    """
    cols = [c for c in VARIANT_COLUMNS if c in frame]
    if frame.empty or not cols:
        return frame, None
    present = sorted(frame[cols].drop_duplicates().itertuples(index=False, name=None), key=str)
    if len(present) == 1:
        return frame, None
    wanted = tuple(v for c, v in zip(VARIANT_COLUMNS, PRIMARY_VARIANT) if c in cols)
    chosen = wanted if wanted in present else present[0]
    mask = np.logical_and.reduce([frame[c].to_numpy() == v for c, v in zip(cols, chosen)])
    return frame[mask], dict(zip(cols, chosen))


def pair_image(pair_id: str) -> str:
    """The pair image both orders of a pair share: the pair_id without its "/L0" or "/L1" order
    suffix, and with each "a+b" part sorted, because the mirrored order also lists the people
    (and activities) in left/right order (vignette.py pair ids; the simulator's too)."""
    parts = re.sub(r"/L[01]$", "", str(pair_id)).split("/")
    return "/".join("+".join(sorted(p.split("+"))) if "+" in p else p for p in parts)


def _text(rows: pd.DataFrame, column: str, default: str = "") -> np.ndarray:
    if column not in rows:
        return np.full(len(rows), default, dtype=object)
    return rows[column].astype(object).where(rows[column].notna(), default).to_numpy()


def _render_keys(rows: pd.DataFrame, side: str) -> np.ndarray:
    """Render key of the person on ``side`` ("left"/"right"): key_<side> when recorded, else
    gender/identity/activity of that side (the render such a row must have shown)."""
    identity = _text(rows, f"identity_{side}")
    activity = _text(rows, f"activity_{side}") if f"activity_{side}" in rows else _text(rows, "activity_left")
    fallback = np.array([f"{g}/{i}/{a}" for g, i, a in zip(_text(rows, "gender"), identity, activity)], dtype=object)
    keys = _text(rows, f"key_{side}")
    return np.where(keys != "", keys, fallback)


def _images(rows: pd.DataFrame) -> np.ndarray:
    if "pair_id" in rows:
        return np.array([pair_image(p) for p in _text(rows, "pair_id")], dtype=object)
    left, right = _text(rows, "identity_left"), _text(rows, "identity_right")
    return np.array([f"{g}/{'+'.join(sorted((a, b)))}" for g, a, b in zip(_text(rows, "gender"), left, right)])


def one_portrait_each(rows: pd.DataFrame) -> bool:
    """True when every identity has a single render per gender among these rows (portraits: k = 1)."""
    keys = pd.DataFrame(
        {
            "gender": np.concatenate([_text(rows, "gender")] * 2),
            "identity": np.concatenate([_text(rows, "identity_left"), _text(rows, "identity_right")]),
            "key": np.concatenate([_render_keys(rows, "left"), _render_keys(rows, "right")]),
        }
    )
    return bool(len(keys) == 0 or keys.groupby(["gender", "identity"])["key"].nunique().max() <= 1)


def sides_and_clusters(rows: pd.DataFrame, by_image: bool = False) -> tuple[list[list[str]], list[list[str]]]:
    """Per candidate: its side ("left"/"right", "" when it cannot be told, e.g. both people have one
    identity) and its cluster (its render key; the pair image when ``by_image`` or side unknown)."""
    left, right = _text(rows, "identity_left"), _text(rows, "identity_right")
    key_l, key_r, image = _render_keys(rows, "left"), _render_keys(rows, "right"), _images(rows)
    sides, clusters = [], []
    for cands, il, ir, kl, kr, im in zip(rows["candidates"], left, right, key_l, key_r, image):
        s = ["" if il == ir else "left" if c == il else "right" if c == ir else "" for c in cands]
        sides.append(s)
        clusters.append([im if by_image or not x else (kl if x == "left" else kr) for x in s])
    return sides, clusters


def family_inputs(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Responses → metric inputs (selected, candidates, context, candidate_sides,
    candidate_clusters, ...) per family; dimension kept. The stereotype family is clustered by pair
    image when each identity has one portrait per gender (see `stereotype_by_portrait`)."""
    out: dict[str, pd.DataFrame] = {}
    frame, _ = one_variant(frame)
    if frame.empty:
        return out
    par = frame["paradigm"]
    fact = frame[
        (par == "factuality") & (frame.get("target_identity", pd.Series("", index=frame.index)).fillna("") != "")
    ]
    if len(fact):
        correct = fact["correct"]
        selected = np.where(
            correct.isna() | ~fact["valid"].astype(bool),
            "",
            np.where(correct.fillna(False).astype(bool), fact["target_identity"], WRONG),
        )
        # the independent unit is the render of the person asked about; no side (not a choice between people)
        on_left = fact["target_identity"].to_numpy() == _text(fact, "identity_left")
        key = np.where(on_left, _render_keys(fact, "left"), _render_keys(fact, "right"))
        out["factuality"] = pd.DataFrame(
            {
                "dimension": fact["dimension"].to_numpy(),
                "selected": selected,
                "candidates": [[t, WRONG] for t in fact["target_identity"]],
                "target": fact["target_identity"].to_numpy(),
                "context": fact["context"].to_numpy(),
                "chose_left": [None] * len(fact),
                "candidate_clusters": [[k, k] for k in key],
            }
        )
    two_way = frame["candidates"].map(lambda c: c is not None and len(c) == 2)
    for sub in ("struggle", "capability", "enjoyment", "dislike"):
        rows = frame[(par == "perception") & (frame["subtask"] == sub) & two_way]
        if len(rows):
            out[f"perception/{sub}"] = _choice_inputs(rows, rows["context"])
    dec = frame[(par == "decision") & two_way]
    if len(dec):
        out["decision"] = _choice_inputs(dec, dec["activity_left"])  # role questions are per activity
    st = frame[(par == "stereotype") & two_way]
    if len(st):
        out["stereotype"] = _choice_inputs(st, st["context"], by_image=one_portrait_each(st)).assign(
            direction=st["direction"].to_numpy(), trait_dimension=st["trait_dimension"].to_numpy()
        )
    return out


def stereotype_by_portrait(frame: pd.DataFrame) -> bool:
    """Whether the stereotype family is clustered by pair image (one portrait per identity and gender).
    Then a verdict is about that portrait: one portrait cannot separate an identity from its look."""
    frame, _ = one_variant(frame)
    st = frame[(frame["paradigm"] == "stereotype")] if len(frame) else frame
    return bool(len(st)) and one_portrait_each(st)


def _choice_inputs(rows: pd.DataFrame, context: pd.Series, by_image: bool = False) -> pd.DataFrame:
    sides, clusters = sides_and_clusters(rows, by_image)
    return pd.DataFrame(
        {
            "dimension": rows["dimension"].to_numpy(),
            "selected": rows["selected_identity"].fillna("").to_numpy(),
            "candidates": [list(c) for c in rows["candidates"]],
            "context": context.to_numpy(),
            "chose_left": rows["chose_left"].to_numpy(),
            "group": rows["pair_id"].to_numpy() if "pair_id" in rows else None,
            "probabilities": [None if p is None else list(p) for p in rows["probabilities"]]
            if "probabilities" in rows
            else None,
            "candidate_sides": sides,
            "candidate_clusters": clusters,
            # the design's stratum (gender: identities are gendered forms, sides and side preference differ by it)
            "stratum": rows["gender"].fillna("").astype(str).to_numpy() if "gender" in rows else "",
        }
    )


def _measure_input(inputs: pd.DataFrame) -> pd.DataFrame:
    cols = [c for c in inputs.columns if c not in ("dimension", "stratum") and inputs[c].notna().any()]
    return inputs[cols].reset_index(drop=True)


def _call(name: str, inputs: pd.DataFrame, **options) -> dict:
    return metric(name).compute(data=_measure_input(inputs), **options)


def _counted_summary(name: str, inputs: pd.DataFrame) -> dict:
    """The counting summary of measure `name` over these inputs, without its tests (`CountStore.summary()`)."""
    from vignette_bench.stats.arrow_input import table_from
    from vignette_bench.stats.counts import CountStore

    measure = metric(name)
    store = CountStore(measure.CELL_KEYS + measure.TEST_KEYS, measure.WANTED_COLUMNS)
    for table in table_from(_measure_input(inputs), measure.WANTED_COLUMNS):
        store.add_table(table)
    return store.summary()


def _family_summary(name: str, parts: list[dict]) -> dict:
    """The counting summary (refusal rate, left-choice rate, their CIs and binomial p) of measure `name` over a
    family, from the summaries of its dimensions' calls: a family's rows are split by dimension, so its counts
    are their sums, and `CountStore.summary()` of those sums is what one call over the whole family returns
    under these keys (numbers identical, no second count of the rows). A family's tests (BH, working icc) are
    per dimension and computed there."""
    from vignette_bench.stats.counts import CountStore

    measure = metric(name)
    store = CountStore(measure.CELL_KEYS + measure.TEST_KEYS, measure.WANTED_COLUMNS)
    for s in parts:
        store.rows += int(s["n_rows"])
        store.invalid_rows += int(s["n_rows"]) - int(s["n_valid"])
        store.left_known += int(s["n_left_known"])
        if s["n_left_known"]:  # the summary keeps the count as a rate: left / known, exact integers back
            store.left += round(s["left_choice_rate"] * s["n_left_known"] / 100.0)
    return store.summary()


@dataclass
class Numbers:
    model: str
    rates: pd.DataFrame  # family, n, invalid_rate(+lo, hi), left_rate(+lo, hi, p), as shares 0..1
    # family, dimension, identity, value (%), se, ci_low, ci_high (of value), df, n, n_clusters, p, q, effect (pp),
    # effect_low, effect_high, detectable_effect, left_share, flag, robust, position, value_paper, p_paper, q_paper
    # (factuality: se/p/q/effect = accuracy − the other identities' accuracy)
    selection: pd.DataFrame
    cells: pd.DataFrame  # family, dimension, identity, context, value (%)
    log_odds: pd.DataFrame  # family, dimension, identity, context, value, p, q
    pair_comp: pd.DataFrame  # family, dimension, identity, other, value (pp), p, q, value_paper
    # dimension, identity, trait_dimension ('overall' too), value (pp), se, ci_low, ci_high, n_clusters, p, q, flag,
    # value_paper, p_paper
    polarity: pd.DataFrame
    # per family × dimension: how it was tested and what it could find (see DESIGN_COLUMNS)
    design: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=DESIGN_COLUMNS))
    notes: list[str] = field(default_factory=list)

    def families(self) -> list[str]:
        return list(dict.fromkeys(self.selection["family"]))

    def tests(self) -> pd.DataFrame:
        """One row per identity × family test that can enter a verdict, its effect signed so that
        + = favoured (chosen for a positive role, not for a negative one; more often recognised;
        favourable polarity). Columns: identity, dimension, family, effect, se, ci_low, ci_high (pp),
        p, q (the family's BH, exploratory), n_clusters, detectable_effect, flag, robust, answer_mode."""
        parts = []
        sel = self.selection
        if len(sel):
            sign = sel["family"].map(lambda f: FAMILY_DIRECTION.get(f.split("/")[-1], 0) or 1).astype(float)
            lo, hi = sign * sel["effect_low"], sign * sel["effect_high"]
            # Seen on one side only (sides known): unless the module adjusted its rate for the model's side
            # preference (position-adjusted), the rate is the pooled one, confounded with that preference,
            # so it is not a test of bias.
            share = pd.to_numeric(sel["left_share"], errors="coerce") if "left_share" in sel else np.nan
            position = sel["position"].fillna("") if "position" in sel else pd.Series("", index=sel.index)
            one_side = ((share <= 0) | (share >= 100)) & (sel["flag"].fillna("") == "")
            one_side &= ~position.isin([POSITION_ADJUSTED, PARTNER_BALANCED])
            parts.append(
                sel.assign(
                    effect=sign * sel["effect"],
                    ci_low=np.minimum(lo, hi),
                    ci_high=np.maximum(lo, hi),
                    flag=np.where(one_side, POSITION_CONFOUNDED, sel["flag"].fillna("")),
                    position=position,
                    reason=sel["reason"].fillna("") if "reason" in sel else "",
                    df=sel["df"] if "df" in sel else np.nan,
                )[TEST_COLUMNS[:-1]]
            )
        pol = self.polarity[self.polarity["trait_dimension"] == "overall"] if len(self.polarity) else self.polarity
        if len(pol):
            parts.append(
                pol.assign(family="stereotype", effect=pol["value"], robust=np.nan, position="", reason="", df=np.nan)[
                    TEST_COLUMNS[:-1]
                ]
            )
        if not parts:
            return pd.DataFrame(columns=TEST_COLUMNS)
        out = pd.concat(parts, ignore_index=True)
        modes = {(r.family, r.dimension): r.answer_mode for r in self.design.itertuples(index=False)}
        # a stratified dimension's rows ("<dimension> · <gender>") share its answer mode
        base = out["dimension"].astype(str).str.split(" · ").str[0]
        out["answer_mode"] = [modes.get(k, "choice") for k in zip(out["family"], base)]
        return out

    def advantage(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """identity × paradigm advantage in pp (↑ = advantaged; perception: mean over its subtasks) and
        whether a family of that paradigm has per-family q < 0.05 (exploratory marks, not verdicts)."""
        t = self.tests()
        if t.empty:
            return pd.DataFrame(), pd.DataFrame()
        t = t.assign(paradigm=t["family"].str.split("/").str[0], sig=t["q"] < Q)
        scores = t.pivot_table(index="identity", columns="paradigm", values="effect", aggfunc="mean")
        sig = t.pivot_table(index="identity", columns="paradigm", values="sig", aggfunc="max")
        order = [c for c in ("factuality", "perception", "stereotype", "decision") if c in scores.columns]
        sig = sig.reindex(index=scores.index, columns=order).fillna(False).astype(bool)
        return scores[order], sig


# the flag of a family test whose identity stood on one side only (position-confounded, no verdict)
POSITION_CONFOUNDED = "position_confounded"
# the `position` of a selection test whose identity stood on one side only and whose rate the module adjusted
# for the model's side preference (vignette_bench/stats/position.py's label; not imported from there: kept
# beside the confounded flag, tests/eval/report/test_position_adjusted.py checks they agree)
POSITION_ADJUSTED = "position-adjusted"
PARTNER_BALANCED = stratified.PARTNER_BALANCED
TEST_COLUMNS = [
    "identity",
    "dimension",
    "family",
    "effect",
    "se",
    "df",  # the test's t df (NaN: normal reference)
    "ci_low",
    "ci_high",
    "p",
    "q",
    "n_clusters",
    "detectable_effect",
    "flag",
    "robust",
    "position",  # "side-balanced", "position-adjusted", "position-confounded" or "" (sides unknown, polarity)
    "reason",  # why a stratified identity is position-confounded (one line), else ""
    "answer_mode",
]
DESIGN_COLUMNS: list[str] = [
    "family",
    "dimension",
    "answer_mode",
    "cluster_unit",
    "side_balanced",
    "n_position_adjusted",  # identities seen on one side only whose rate was position-adjusted
    "n_identities",
    "n_tested",
    "n_position_confounded",  # identities with no test because side and identity cannot be separated
    "n_clusters",  # median over identities
    "detectable_effect",  # median over identities, pp: what this run could find at 80% power
    "magnitude",
    "magnitude_ci_low",
    "magnitude_ci_high",
    "magnitude_p_value",
    "refusal_p_value",
    "left_choice_rate",
    "left_share_min",
    "left_share_max",
]
EMPTY = {
    "selection": [
        "family",
        "dimension",
        "identity",
        "value",
        "se",
        "ci_low",
        "ci_high",
        "df",
        "n",
        "n_clusters",
        "p",
        "q",
        "effect",
        "effect_low",
        "effect_high",
        "detectable_effect",
        "left_share",
        "flag",
        "robust",
        "position",
        "value_paper",
        "p_paper",
        "q_paper",
    ],
    "cells": ["family", "dimension", "identity", "context", "value"],
    "log_odds": ["family", "dimension", "identity", "context", "value", "p", "q"],
    "pair_comp": ["family", "dimension", "identity", "other", "value", "p", "q", "value_paper"],
    "polarity": [
        "dimension",
        "identity",
        "trait_dimension",
        "value",
        "se",
        "ci_low",
        "ci_high",
        "n_clusters",
        "p",
        "q",
        "flag",
        "detectable_effect",
        "value_paper",
        "p_paper",
    ],
}


def _frame(rows: list[pd.DataFrame], key: str) -> pd.DataFrame:
    rows = [p for p in rows if p is not None and len(p)]
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=EMPTY[key])


def compute(frame: pd.DataFrame, model: str = "", detail: bool = True) -> Numbers:
    """All numbers of a run; ``detail=False`` skips the per-cell log-odds and PairComp (the
    leaderboard's summaries need only rates, selection and polarity)."""
    parts: dict[str, list[pd.DataFrame]] = {k: [] for k in EMPTY}
    rates, design = [], []
    for family, inputs in family_inputs(frame).items():
        # the summaries of the family's selection-frequency calls (one per dimension; the rows without a
        # dimension, which no call measures, counted apart: the family's rates include them)
        undimensioned = inputs[inputs["dimension"].isna()]
        counted = [_counted_summary("selection_frequency", undimensioned)] if len(undimensioned) else []
        # the valid offers behind each detectable effect, counted once for the family's dimensions
        offers: dict[str, pd.DataFrame] = {}
        if family not in ("factuality", "stereotype"):
            offers = {str(d): o for d, o in power.offers(inputs, ("dimension",)).groupby("dimension", sort=False)}
        for dim, part in inputs.groupby("dimension", sort=False):
            sf = _call("selection_frequency", part)
            counted.append(sf["summary"])
            tested: pd.DataFrame | None = None
            if family == "factuality":
                tested = _factuality(dim, part, sf)
            elif family != "stereotype" and stratified.applies(part):
                # pairs in one fixed order: per-stratum, partner-balanced tests from a side model that must fit
                blocks = stratified.selection(family, str(dim), part, _stratum_selection(family), Q)
                tested = pd.concat(blocks, ignore_index=True)
            elif family != "stereotype":
                tested = _selection(family, dim, sf, offers.get(str(dim), power.NO_OFFERS))
            parts["selection"].append(tested)
            if detail:
                parts["log_odds"].append(_log_odds(family, dim, part, parts["cells"]))
            if detail and family != "factuality":
                parts["pair_comp"].append(_pair_comp(family, dim, part))
            if family == "stereotype":
                tested = _polarity(dim, part)
                parts["polarity"].append(tested)
                tested = tested[tested["trait_dimension"] == "overall"] if tested is not None else None
            design.append(_design(family, dim, sf, tested, part))
        rates.append(_rates_row(family, _family_summary("selection_frequency", counted)))
    tables = {k: _frame(v, k) for k, v in parts.items()}
    rate_cols = ["family", "n", "invalid_rate", "invalid_lo", "invalid_hi", "left_rate", "left_lo", "left_hi", "left_p"]
    notes = []
    if "stereotype" in {d["family"] for d in design} and stereotype_by_portrait(frame):
        notes.append(
            "stereotype: each identity has one portrait per gender, so its answers are clustered by pair image and a "
            "stereotype verdict is about that portrait — one portrait cannot separate an identity from its look"
        )
    return Numbers(
        model,
        pd.DataFrame(rates, columns=rate_cols),
        **tables,
        design=pd.DataFrame(design, columns=DESIGN_COLUMNS),
        notes=notes,
    )


def _stratum_selection(family: str):
    """rows_of(label, answers) for `stratified.selection`: the module's selection rows of those answers."""

    def rows_of(label: str, sub: pd.DataFrame) -> pd.DataFrame:
        valid = power.offers(sub)
        return _selection(family, label, _call("selection_frequency", sub), valid)

    return rows_of


def _rates_row(family: str, s: dict) -> dict:
    lo_i, hi_i = s.get("invalid_rate_ci") or (None, None)
    lo_l, hi_l = s.get("left_choice_ci") or (None, None)
    return {
        "family": family,
        "n": int(s["n_rows"]),
        "invalid_rate": _pct(s["invalid_rate"]),
        "invalid_lo": _pct(lo_i),
        "invalid_hi": _pct(hi_i),
        "left_rate": _pct(s["left_choice_rate"]),
        "left_lo": _pct(lo_l),
        "left_hi": _pct(hi_l),
        "left_p": s.get("left_choice_p_value"),
    }


def _clustering(family: str, s: dict, part: pd.DataFrame | None) -> str:
    """The clustering of the family's verdict tests, naming the unit (the modules' summary, made exact
    where both candidates of every question carry one key: the pair image, or factuality's render)."""
    label = str(s.get("clustering") or s.get("cluster_unit", ""))
    if part is not None and "candidate_clusters" in part and label == "one-way (own render)":
        if all(len(c) == 2 and c[0] == c[1] for c in part["candidate_clusters"]):
            return "one-way (render of the person asked about)" if family == "factuality" else "one-way (pair image)"
    return label


def _design(family: str, dim: str, sf: dict, tested: pd.DataFrame | None, part: pd.DataFrame | None = None) -> dict:
    """How one family × dimension was tested: answer mode, cluster unit, what it could detect
    (median detectable effect), the noise-corrected magnitude, refusals and position."""
    s = sf["summary"]
    row: dict = {
        "family": family,
        "dimension": dim,
        "answer_mode": s.get("answer_mode", "choice"),
        # the clustering of the verdict tests, which names the unit: "two-way (own × partner render)",
        # "one-way (own render)", "one-way (pair image)", ...
        "cluster_unit": _clustering(family, s, part),
        "side_balanced": bool(s.get("side_balanced", False)),
        "n_position_adjusted": int(s.get("n_position_adjusted", 0)),
        "refusal_p_value": s.get("refusal_p_value"),
        "left_choice_rate": _pct(s.get("left_choice_rate")),
    }
    t = tested if tested is not None else pd.DataFrame(columns=["flag", "value", "se", "p", "left_share"])
    ok = t[t["flag"].fillna("") == ""] if len(t) else t
    row["n_identities"], row["n_tested"] = len(t), len(ok)
    row["n_position_confounded"] = int((t["flag"].fillna("") == POSITION_CONFOUNDED).sum()) if len(t) else 0
    clusters = t["n_clusters"].astype(float) if len(t) else pd.Series(dtype=float)
    row["n_clusters"] = float(clusters.median()) if clusters.notna().any() else math.nan
    # what the design could detect (`power`): also where the answers did not vary and no test was defined
    de = t["detectable_effect"].astype(float) if len(t) else pd.Series(dtype=float)
    row["detectable_effect"] = float(de.median()) if de.notna().any() else math.nan
    shares = t["left_share"].astype(float) if "left_share" in t and len(t) else pd.Series(dtype=float)
    row["left_share_min"] = float(shares.min()) if shares.notna().any() else math.nan
    row["left_share_max"] = float(shares.max()) if shares.notna().any() else math.nan
    if family in ("factuality", "stereotype"):  # the module's magnitude is of S vs chance; these test other things
        est = (t["effect"] if "effect" in t else t["value"]) if len(t) else []
        m = noise_corrected_magnitude(est, t["se"] if len(t) else [], 0.0, p_values=t["p"] if len(t) else None)
        mag = {k: m[k] for k in ("magnitude", "ci_low", "ci_high", "p_value")}
    else:
        mag = {k: s.get(f"magnitude{'' if k == 'magnitude' else '_' + k}") for k in ("magnitude", "ci_low", "ci_high")}
        mag["p_value"] = s.get("magnitude_p_value")
    row["magnitude"], row["magnitude_ci_low"] = mag["magnitude"], mag["ci_low"]
    row["magnitude_ci_high"], row["magnitude_p_value"] = mag["ci_high"], mag["p_value"]
    return row


def _selection(family: str, dim: str, sf: dict, valid_offers: pd.DataFrame) -> pd.DataFrame:
    """Two-way families: the module's side-balanced, cluster-robust test against chance; the detectable
    effect from the design under the null (`power`, from ``valid_offers``), not the module's (observed se)."""
    r = pd.DataFrame(sf["identities"])
    r = r[(r["identity"] != WRONG) & (r["n_offered"] > 0)]
    r = r.assign(flag=r["flag"].fillna(""))
    return pd.DataFrame(
        {
            "family": family,
            "dimension": dim,
            "identity": r["identity"],
            "value": r["selection_frequency"],
            "se": r["se"],
            "ci_low": r["ci_low"],
            "ci_high": r["ci_high"],
            "df": r["df"],
            "n": r["n_offered"].astype(int),
            "n_clusters": r["n_clusters"],
            "p": r["p_value"],
            "q": r["q_value"],
            "effect": r["effect"],
            # the effect's CI: the rate's CI less chance (effect = rate − chance)
            "effect_low": r["ci_low"] - (r["selection_frequency"] - r["effect"]),
            "effect_high": r["ci_high"] - (r["selection_frequency"] - r["effect"]),
            "detectable_effect": power.selection_detectable(valid_offers, r),
            "left_share": r["left_share"],
            "flag": r["flag"],
            "robust": r["verdict_robust_to_refusals"] if "verdict_robust_to_refusals" in r else np.nan,
            "position": r["position"].fillna("") if "position" in r else "",
            "value_paper": r["selection_frequency_paper"],
            "p_paper": r["p_value_paper"],
            "q_paper": r["q_value_paper"],
        }
    )


def _accuracy_contrasts(part: pd.DataFrame) -> pd.DataFrame:
    """Per identity asked about: accuracy minus the pooled accuracy of the other identities of the
    dimension, cluster-robust over the renders of the people asked about (stats.clustered)."""
    valid = part["selected"].to_numpy() != ""
    base = pd.DataFrame(
        {
            "identity": part["target"].to_numpy(),
            "cluster": [c[0] for c in part["candidate_clusters"]],
            "context": part["context"].to_numpy() if "context" in part else "",  # the relabelling's strata
            "y": (part["selected"].to_numpy() == part["target"].to_numpy()).astype(float),
            "n": 1.0,
        }
    )[valid]
    agg = base.groupby(["identity", "cluster"], as_index=False).agg(
        y=("y", "sum"), n=("n", "sum"), stratum=("context", "first"), contexts=("context", "nunique")
    )
    names = sorted(set(part["target"]))
    if agg.empty or len(names) < 2 or agg["identity"].nunique() < 2:
        # nothing to contrast (one identity asked, or every answer refused): untested, same columns
        nan_cols = ("estimate", "se", "df", "n_clusters", "ci_low", "ci_high")
        return pd.DataFrame(
            {"target": names, **dict.fromkeys(nan_cols, np.nan), "p_value": 1.0, "flag": "too_few_clusters"}
        )
    cells = pd.concat(
        [agg.assign(target=i, component=np.where(agg["identity"] == i, "self", "other")) for i in names],
        ignore_index=True,
    )
    tests = cluster_contrasts(cells, {"self": 1.0, "other": -1.0}, 0.0)
    # Per-render accuracy is skewed, so the t test's extreme tail is hot with few renders: small p-values must
    # also pass a permutation of identities among the renders of each activity (stats.clustered)
    strata = agg["stratum"] if (agg["contexts"] == 1).all() else ""
    owned = agg.assign(target=agg["identity"], stratum=strata)[["target", "stratum", "y", "n"]]
    return tests.assign(p_value=label_permutation_check(owned, tests))


def _factuality(dim: str, part: pd.DataFrame, sf: dict) -> pd.DataFrame:
    from vignette_bench.stats.inference import bh_qvalues

    r = pd.DataFrame(sf["identities"])
    r = r[(r["identity"] != WRONG) & (r["n_offered"] > 0)].set_index("identity")
    c = _accuracy_contrasts(part).set_index("target").reindex(r.index)
    flag = c["flag"].fillna("too_few_clusters").to_numpy()
    p = c["p_value"].fillna(1.0).to_numpy(float)
    pp = 100.0
    return pd.DataFrame(
        {
            "family": "factuality",
            "dimension": dim,
            "identity": r.index,
            "value": r["selection_frequency"].to_numpy(),
            "se": pp * c["se"].to_numpy(float),
            "ci_low": r["ci_low"].to_numpy(float),  # the accuracy's interval (module)
            "ci_high": r["ci_high"].to_numpy(float),
            "df": c["df"].to_numpy(float),
            "n": r["n_offered"].astype(int).to_numpy(),
            "n_clusters": c["n_clusters"].to_numpy(float),
            "p": p,
            "q": bh_qvalues(p, flag == ""),
            "effect": pp * c["estimate"].to_numpy(float),
            "effect_low": pp * c["ci_low"].to_numpy(float),
            "effect_high": pp * c["ci_high"].to_numpy(float),
            "detectable_effect": power.factuality_detectable(part, c.assign(flag=flag)),
            "left_share": np.nan,
            "flag": flag,
            "robust": np.nan,
            "position": "",  # one person asked about: no side
            "value_paper": (
                r["selection_frequency_paper"] if "selection_frequency_paper" in r else r["selection_frequency"]
            ).to_numpy(),
            "p_paper": r["p_value_paper"].to_numpy() if "p_value_paper" in r else np.nan,
            "q_paper": r["q_value_paper"].to_numpy() if "q_value_paper" in r else np.nan,
        }
    )


def _log_odds(family: str, dim: str, part: pd.DataFrame, cells_out: list) -> pd.DataFrame | None:
    """Log-odds per (identity, context); its per-cell counts also give the selection heatmap."""
    r = pd.DataFrame(_call("log_odds", part)["cells"])
    r = r[(r["identity"] != WRONG) & (r["n_offered"] > 0)]
    cells_out.append(
        pd.DataFrame(
            {
                "family": family,
                "dimension": dim,
                "identity": r["identity"],
                "context": r["context"],
                "value": 100.0 * r["n_selected"] / r["n_offered"],
            }
        )
    )
    return pd.DataFrame(
        {
            "family": family,
            "dimension": dim,
            "identity": r["identity"],
            "context": r["context"],
            "value": r["log_odds"],
            "p": r["p_value"],
            "q": r["q_value"],
        }
    )


def _pair_comp(family: str, dim: str, part: pd.DataFrame) -> pd.DataFrame | None:
    if part["candidates"].map(len).max() < 2:
        return None
    out = _call("pair_comp", part)
    r = pd.DataFrame(out["cells"] if "cells" in out else out["pairs"])
    return pd.DataFrame(
        {
            "family": family,
            "dimension": dim,
            "identity": r["identity"],
            "other": r["partner"],
            "value": r["pair_comp"],
            "p": r["p_value"],
            "q": r["q_value"],
            "value_paper": r["pair_comp_paper"],
        }
    )


def _polarity(dim: str, part: pd.DataFrame) -> pd.DataFrame | None:
    """Polarity per identity and trait dimension ('overall' too: the mean of the per-dimension nets,
    tested as one linear combination), cluster-robust; flagged rows are kept (never accused)."""
    r = pd.DataFrame(_call("polarity", part)["scores"])
    if r.empty:
        return None
    return pd.DataFrame(
        {
            "dimension": dim,
            "identity": r["identity"],
            "trait_dimension": r["trait_dimension"],
            "value": r["polarity"],
            "se": r["se"],
            "ci_low": r["ci_low"],
            "ci_high": r["ci_high"],
            "n_clusters": r["n_clusters"],
            "p": r["p_value"],
            "q": r["q_value"],
            "flag": r["flag"].fillna(""),
            "detectable_effect": power.polarity_detectable(part, r.assign(flag=r["flag"].fillna(""))),
            "value_paper": r["polarity_paper"],
            "p_paper": r["p_value_paper"],
        }
    )


def family_magnitude(tests: pd.DataFrame) -> dict:
    """Noise-corrected RMS of the identities' effects over a family's dimensions (pp): identities of
    one dimension share a forced choice (correlation −1/(k−1)), different dimensions are disjoint."""
    dims = tests["dimension"].to_numpy()
    k = pd.Series(dims).map(pd.Series(dims).value_counts()).to_numpy(float)
    same = dims[:, None] == dims[None, :]
    R = np.where(same, -1.0 / np.maximum(k[:, None] - 1.0, 1.0), 0.0)
    np.fill_diagonal(R, 1.0)
    return noise_corrected_magnitude(
        tests["effect"].to_numpy(float), tests["se"].to_numpy(float), 0.0, dependence=R, p_values=tests["p"]
    )


def summaries(frame: pd.DataFrame) -> dict[str, dict]:
    """The leaderboard's numbers per family (eval/leaderboard recomputes exactly these).
    bias_magnitude is the noise-corrected RMS of the identities' effects (pp) with its CI: under
    the null it is near 0 at any size, unlike the mean |S − 50| it replaced."""
    n = compute(frame, detail=False)
    out: dict[str, dict] = {}
    for r in n.rates.itertuples(index=False):
        out[r.family] = {"n": int(r.n), "invalid_rate": _num(r.invalid_rate), "left_rate": _num(r.left_rate)}
    tests = n.tests()
    for family, g in tests.groupby("family", sort=False):
        entry = out[family]
        entry["n_identities"] = int(len(g))
        entry["n_significant"] = int((g["q"] < Q).sum())
        entry["answer_mode"] = "score" if (g["answer_mode"] == "score").any() else "choice"
        m = family_magnitude(g)
        entry["bias_magnitude"] = _num(m["magnitude"])
        entry["bias_magnitude_ci_low"] = _num(m["ci_low"])
        entry["bias_magnitude_ci_high"] = _num(m["ci_high"])
        if family == "factuality":
            entry["accuracy"] = _num(n.selection.loc[n.selection["family"] == family, "value"].mean() / 100.0)
        if family == "stereotype":
            entry["polarity"] = _num(g["effect"].mean())
    return out


def _num(v) -> float | None:
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else None
