"""Seeded simulated runs in the documented responses schema (docs/FORMATS.md, "Responses").

Test input for the report and the leaderboard while no real run is at hand, and the null and
planted models behind the verdict calibration (tests/calibration, benchmarks/verdict_calibration.py).
It mirrors the reference random responder of the runner; it is not a replacement for a run of the
runner (`vignette run`).

The model. A two-way question shows a pair image of two people (left L, right R); the answer
chooses L with probability ``sigmoid(eta)``,

    eta = logit(p_left) + b_L - b_R + u_render(L) - u_render(R) + s * v_image,

where ``b_i = logit(planted[i])`` (0 unplanted: P(chosen) = planted[i] when offered against an
unplanted identity, the field's meaning), ``u`` is a render's random effect (sd ``render_sd``;
a render is one generated image of an identity doing an activity, or a portrait, and recurs in
every pair image it is composed into), ``v`` the pair image's (sd ``pair_image_sd``; both orders
of a pair are one image, ``s`` = +1 for the person listed first in the taxonomy) and ``p_left``
the side preference. Factuality (options are activities) chooses the right activity with weight
``exp(u_render)`` of the person asked about against 1 for each distractor. With every knob at its
default this is the uniform-random responder the simulator always was, draw for draw: the answers
consume numpy's stream of ``default_rng(seed)`` exactly as the earlier row-by-row loop did (a
refusal draw, then a choice draw unless refused; a shuffle per factuality question), replayed from
raw 64-bit draws (`_Stream`) so that a paper-scale family simulates in seconds. Random effects,
render choices and orders use their own streams, so they never shift the answers' stream.

``answer_mode="score"`` writes ``probabilities`` (the model's probability of each option) and
the most probable option as the choice; refusals stay invalid rows without probabilities.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np
import pandas as pd
import pyarrow as pa

from vignette_bench.eval.runtime.folder import RunFolder
from vignette_bench.formats.responses import RESPONSE_COLUMNS, RESPONSE_SCHEMA
from vignette_bench.formats.run_record import (
    PARAPHRASES,
    DatasetProvenance,
    ModelProvenance,
    RunRecord,
    RunSettings,
    Variants,
)
from vignette_bench.taxonomy import Gender, load_taxonomy, slug

PERCEPTION = ("struggle", "capability", "enjoyment", "dislike")
PORTRAIT = "portrait"
_NULL = np.array(None, dtype=object)  # a null cell in np.where  # the activity part of a portrait's render key

# Size presets (merge into a SimSpec with dimensions and genders of your choice): the demo's few
# activities and terms; a sampled run (more activities, one order per pair image, so an identity's
# left share varies as in a sample); the paper's full design (75 activities, 60 trait terms, both orders).
SCALES: dict[str, dict[str, Any]] = {
    "demo": dict(n_activities=4, n_traits=8),
    "sample": dict(n_activities=12, n_traits=20, orders="random"),
    "paper": dict(n_activities=75, n_traits=60),
}


@dataclass(frozen=True)
class SimSpec:
    """What to simulate. Everything random follows from ``seed``; every field defaults to the plain
    uniform-random responder (see the module docstring for the model)."""

    seed: int = 0
    model_id: str = "reference/uniform-random"
    dimensions: tuple[str, ...] = ("religion", "gender")
    genders: tuple[str, ...] = ("female", "male")
    n_activities: int = 4
    n_traits: int = 6  # trait terms (high and low alternate in taxonomy order)
    refusal_rate: float = 0.05
    planted: tuple[tuple[str, float], ...] = ()  # (identity, P(chosen) when offered against an unplanted one)
    paradigms: tuple[str, ...] = ("factuality", "perception", "stereotype", "decision")
    repeats: int = 1  # paraphrases asked per question
    pair_image_sd: float = 0.0  # logit sd of a pair image's effect (shared by both orders and all its questions)
    render_sd: float = 0.0  # logit sd of a render's effect, wherever the render appears
    p_left: float = 0.5  # P(choose the left person) when nothing else differs
    refusal_by_identity: tuple[tuple[str, float], ...] = ()  # (identity, extra refusal probability when in the image)
    renders_per_cell: int = 1  # k renders per (gender, identity, activity) and per portrait; a pair uses one of each
    answer_mode: Literal["choice", "score"] = "choice"
    orders: Literal["both", "random"] = "both"  # "random": one order per pair image, drawn from the seed
    perception_subtasks: tuple[str, ...] = PERCEPTION

    def __post_init__(self) -> None:
        if not 0.0 < self.p_left < 1.0:
            raise ValueError(f"p_left must lie in (0, 1), got {self.p_left}")
        if self.renders_per_cell < 1:
            raise ValueError(f"renders_per_cell must be >= 1, got {self.renders_per_cell}")
        if self.pair_image_sd < 0 or self.render_sd < 0:
            raise ValueError("random-effect sds must be >= 0")
        if self.answer_mode not in ("choice", "score") or self.orders not in ("both", "random"):
            raise ValueError(f"unknown answer_mode {self.answer_mode!r} or orders {self.orders!r}")
        if any(not 0.0 < p < 1.0 for _, p in self.planted):
            raise ValueError("planted probabilities must lie in (0, 1)")
        if unknown := set(self.perception_subtasks) - set(PERCEPTION):
            raise ValueError(f"unknown perception subtasks {sorted(unknown)}")


# -- the answers' random stream -------------------------------------------------------------------


class _Stream:
    """``default_rng(seed)``'s draws replayed from raw 64-bit outputs of its PCG64: ``random()`` is
    ``(raw >> 11) * 2**-53``; ``shuffle`` of a list takes bounded integers from 32-bit halves (the
    upper half kept for the next one), as numpy's Generator does. Exact, and ~50x faster than calling
    ``random()`` and ``choice`` per answer."""

    def __init__(self, seed: int, expected: int) -> None:
        self._bitgen = np.random.default_rng(seed).bit_generator
        state = self._bitgen.state
        self._has32, self._u32 = bool(state["has_uint32"]), int(state["uinteger"])
        self._chunk = max(1024, expected)
        self._raw: list[int] = []
        self._double: list[float] = []
        self._i = 0

    def _refill(self) -> None:
        raw = self._bitgen.random_raw(self._chunk)
        self._raw = self._raw[self._i :] + raw.tolist()
        self._double = self._double[self._i :] + ((raw >> np.uint64(11)) * (1.0 / 9007199254740992.0)).tolist()
        self._i = 0

    def _next32(self) -> int:
        if self._has32:
            self._has32 = False
            return self._u32
        if self._i >= len(self._raw):
            self._refill()
        raw = self._raw[self._i]
        self._i += 1
        self._has32, self._u32 = True, raw >> 32
        return raw & 0xFFFFFFFF

    def permutation(self, m: int) -> list[int]:
        """The order ``Generator.shuffle`` leaves a list of ``m`` items in (as indices)."""
        x = list(range(m))
        for i in range(m - 1, 0, -1):
            mask = (1 << i.bit_length()) - 1  # smallest all-ones mask >= i
            while (j := self._next32() & mask) > i:
                pass
            x[i], x[j] = x[j], x[i]
        return x

    def answers(
        self, is_fact: np.ndarray, refusal: np.ndarray, reps: int, m: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The old loop's draws: per factuality question a shuffle of its ``m`` options, per answer
        (question x ``reps``) a refusal draw u1, then a choice draw u2 unless u1 < refusal (NaN)."""
        n = len(is_fact) * reps
        u1, u2 = [0.0] * n, [float("nan")] * n
        perms: list[list[int]] = []
        row = 0
        for fact, r in zip(is_fact.tolist(), refusal.tolist()):
            if fact:
                perms.append(self.permutation(m))
            for _ in range(reps):
                if self._i + 2 > len(self._double):
                    self._refill()
                d, i = self._double, self._i  # the hot loop: plain list reads
                u1[row] = x = d[i]
                if x >= r:
                    u2[row] = d[i + 1]
                    self._i = i + 2
                else:
                    self._i = i + 1
                row += 1
        return np.array(u1), np.array(u2), np.array(perms, dtype=np.int64).reshape(-1, m)


# -- the questions -------------------------------------------------------------------------------

_FACT, _TWO = 0, 1


@dataclass
class _Slots:
    """The questions asked about every ordered pair of a block, in the order the runner asks them."""

    paradigm: list[str]
    subtask: list[str]
    context: list[str]
    direction: list[str]
    trait_dimension: list[str]
    activity: list[int]  # index into the activities; n_activities for a portrait
    kind: list[int]


def _slots(spec: SimSpec, activities: list[str], terms: list, roles: list) -> _Slots:
    s = _Slots([], [], [], [], [], [], [])

    def add(paradigm: str, subtask: str, context: str, act: int, kind: int, direction: str = "", tdim: str = ""):
        for col, v in zip(
            (s.paradigm, s.subtask, s.context, s.direction, s.trait_dimension, s.activity, s.kind),
            (paradigm, subtask, context, direction, tdim, act, kind),
        ):
            cast(list, col).append(v)

    for a, act in enumerate(activities):
        if "factuality" in spec.paradigms:
            add("factuality", "what_doing", act, a, _FACT)
        if "perception" in spec.paradigms:
            for sub in (p for p in PERCEPTION if p in spec.perception_subtasks):
                add("perception", sub, act, a, _TWO)
        if "decision" in spec.paradigms:
            for rq in (r for r in roles if r.activity == act):
                add("decision", rq.dimension, rq.question, a, _TWO)
    if "stereotype" in spec.paradigms:
        for term, direction, tdim in terms:
            add("stereotype", tdim, term, len(activities), _TWO, direction, tdim)
    return s


def _logit(p: float) -> float:
    return float(np.log(p / (1.0 - p)))


@dataclass
class _Questions:
    """One entry per question (before paraphrases), in the runner's order."""

    slot: np.ndarray
    gender: np.ndarray
    dimension: np.ndarray
    left: np.ndarray
    right: np.ndarray
    pair_part: np.ndarray  # slug(dimension)/slug(left)+slug(right) of the pair id
    key_left: np.ndarray
    key_right: np.ndarray
    u_left: np.ndarray  # render effects (logit)
    u_right: np.ndarray
    v: np.ndarray  # the pair image's effect in favour of the left person (logit)
    odds_left: np.ndarray  # planted odds (1 unplanted)
    odds_right: np.ndarray
    refusal: np.ndarray  # P(refusal)
    pair: np.ndarray  # index of the ordered pair (left, right) into `pairs`
    pairs: list[tuple[str, str]]


def _questions(spec: SimSpec, slots: _Slots, n_act: int) -> _Questions:
    tax = load_taxonomy()
    planted, extra = dict(spec.planted), dict(spec.refusal_by_identity)
    k, n_slots = spec.renders_per_cell, len(slots.kind)
    slot_act = np.asarray(slots.activity, dtype=np.int64)
    act_names = [a.name for a in tax.activities[:n_act]] + [PORTRAIT]
    effects = np.random.default_rng([spec.seed, 0x5EED])  # random effects, render choices, orders
    parts: list[dict[str, np.ndarray]] = []
    all_pairs: list[tuple[str, str]] = []
    for gender, dim in itertools.product(spec.genders, spec.dimensions):
        if dim == "gender" and gender != spec.genders[0]:
            continue
        idents = [i.name for i in tax.identities_in(dim, cast(Gender, gender))] if dim != "gender" else ["man", "woman"]
        g, n = ("mixed" if dim == "gender" else gender), len(idents)
        # drawn whatever the sds, so a spec's renders and orders do not depend on them
        u = effects.standard_normal((n, n_act + 1, k)) * spec.render_sd
        render_of = effects.integers(0, k, size=(n, n, n_act + 1))  # render of person i when paired with j
        v = effects.standard_normal((n, n, n_act + 1)) * spec.pair_image_sd  # image of i < j: favours i
        i_left = effects.random((n, n, n_act + 1)) < 0.5  # orders="random": the image of i < j shows i left
        pairs = np.array(list(itertools.permutations(range(n), 2)), dtype=np.int64).reshape(-1, 2)
        L, R = np.repeat(pairs[:, 0], n_slots), np.repeat(pairs[:, 1], n_slots)
        pair = np.repeat(np.arange(len(pairs)) + len(all_pairs), n_slots)
        all_pairs += [(idents[x], idents[y]) for x, y in pairs]
        slot = np.tile(np.arange(n_slots), len(pairs))
        a = slot_act[slot]
        lo, hi = np.minimum(L, R), np.maximum(L, R)
        if spec.orders == "random":
            keep = i_left[lo, hi, a] == (L < R)
            L, R, slot, a, lo, hi, pair = L[keep], R[keep], slot[keep], a[keep], lo[keep], hi[keep], pair[keep]
        rl, rr = render_of[L, R, a], render_of[R, L, a]
        names = np.array(idents, dtype=object)
        keys = np.array(
            [[[f"{g}/{i}/{x}/r{r + 1}" for r in range(k)] for x in act_names] for i in idents], dtype=object
        )
        pair_part = np.array([[f"{slug(dim)}/{slug(x)}+{slug(y)}" for y in idents] for x in idents], dtype=object)
        odds = np.array([planted[i] / (1 - planted[i]) if i in planted else 1.0 for i in idents])
        refuse = np.array([extra.get(i, 0.0) for i in idents])
        parts.append(
            dict(
                slot=slot,
                gender=np.full(len(L), g, dtype=object),
                dimension=np.full(len(L), dim, dtype=object),
                left=names[L],
                right=names[R],
                pair_part=pair_part[L, R],
                key_left=keys[L, a, rl],
                key_right=keys[R, a, rr],
                u_left=u[L, a, rl],
                u_right=u[R, a, rr],
                v=np.where(L < R, 1.0, -1.0) * v[lo, hi, a],
                odds_left=odds[L],
                odds_right=odds[R],
                # P(refusal) with the identities in the image; refusal_rate itself when none is named
                refusal=np.clip(spec.refusal_rate + (refuse[L] + refuse[R]), 0.0, 1.0),
                pair=pair,
            )
        )
    arrays = [f for f in _Questions.__annotations__ if f != "pairs"]
    cols = {f: np.concatenate([p[f] for p in parts]) if parts else np.zeros(0) for f in arrays}
    cols["slot"], cols["pair"] = cols["slot"].astype(np.int64), cols["pair"].astype(np.int64)
    return _Questions(**cols, pairs=all_pairs)


def simulate(spec: SimSpec) -> pd.DataFrame:
    """Rows in the responses schema for every pair of the spec's dimensions (both orders, or one
    random order per pair image with ``orders="random"``)."""
    tax = load_taxonomy()
    activities = [a.name for a in tax.activities[: spec.n_activities]]
    terms = list(tax.trait_terms[: spec.n_traits])
    roles = [r for r in tax.role_questions if r.activity in activities]
    slots = _slots(spec, activities, terms, roles)
    qs = _questions(spec, slots, len(activities))
    m_fact = min(4, len(activities))
    slot_fact = np.asarray(slots.kind, dtype=np.int64) == _FACT
    is_fact_q = slot_fact[qs.slot] if len(qs.slot) else np.zeros(0, dtype=bool)
    expected = 2 * len(is_fact_q) * spec.repeats + 4 * int(is_fact_q.sum()) + 16
    u1, u2, perms = _Stream(spec.seed, expected).answers(is_fact_q, qs.refusal, spec.repeats, m_fact)
    d = _draw(spec, qs, is_fact_q, u1, u2, perms, m_fact)
    act_idx = np.asarray(slots.activity, dtype=np.int64)[d.slot]
    q_pair_id, qid, para = _question_ids(spec, slots, qs, d, activities)
    options, option_ids, candidates = _options(qs, d, act_idx, activities, m_fact)
    return _frame(
        spec, slots, qs, d, act_idx, activities, m_fact, q_pair_id, qid, para, options, option_ids, candidates
    )


@dataclass(frozen=True)
class _Draws:
    """Each answer's question, slot and draw: refused, the option picked (k), factuality's option order."""

    q: np.ndarray
    slot: np.ndarray
    refused: np.ndarray
    k: np.ndarray
    fact: np.ndarray
    perm: np.ndarray
    is_fact: np.ndarray  # per answer
    p_l: np.ndarray
    p_r: np.ndarray
    p_f: np.ndarray


def _draw(spec: SimSpec, qs: Any, is_fact_q: np.ndarray, u1, u2, perms, m_fact: int) -> _Draws:
    """The answers: who is chosen (two-way: planted odds, image and render effects, side preference) and
    which activity (factuality), from the pre-drawn uniform stream so a seed gives the same rows."""

    reps = spec.repeats
    q = np.repeat(np.arange(len(qs.slot)), reps)
    slot = qs.slot[q]
    refused = u1 < qs.refusal[q]
    # two-way: the weights of (left, right) exactly as the old loop formed them when nothing is random
    # (planted odds against 1); two planted identities in one question add their logits
    w_l = qs.odds_left[q] * np.exp(qs.u_left[q] + qs.v[q] + _logit(spec.p_left))
    w_r = qs.odds_right[q] * np.exp(qs.u_right[q])
    p_l, p_r = w_l / (w_l + w_r), w_r / (w_l + w_r)
    k = np.where(u2 < p_l / (p_l + p_r), 0, 1)  # Generator.choice: cumsum(p) / its last value, searchsorted
    # factuality: the right activity (option 0 before the shuffle) weighs exp(u) of the person asked about
    fact = np.flatnonzero(is_fact_q[q])
    perm = perms[(np.cumsum(is_fact_q) - 1)[q[fact]]] if len(fact) else np.zeros((0, m_fact), dtype=np.int64)
    w_f = np.where(perm == 0, np.exp(qs.u_left[q[fact]])[:, None], 1.0)
    p_f = w_f / w_f.sum(axis=1, keepdims=True)
    cdf = p_f.cumsum(axis=1)
    cdf /= cdf[:, -1:]
    k_f = (cdf <= u2[fact, None]).sum(axis=1)
    if spec.answer_mode == "score":  # the most probable option is the answer
        k, k_f = np.where(p_l >= p_r, 0, 1), p_f.argmax(axis=1)
    k[fact] = k_f

    return _Draws(q, slot, refused, k, fact, perm, is_fact_q[q], p_l, p_r, p_f)


def _question_ids(spec: SimSpec, slots: Any, qs: Any, d: _Draws, activities: list[str]):
    """Pair ids per question and question ids per answer (hashes of the old loop's JSON, C-encoded strings)."""
    q, slot = d.q, d.slot
    reps = spec.repeats
    # pair ids per question, then per answer; question ids hash the old loop's JSON (C-encoded strings)
    enc = json.encoder.encode_basestring_ascii  # type: ignore[attr-defined]
    act_slug = [slug(x) for x in activities] + [""]
    q_act = np.asarray(slots.activity, dtype=np.int64)[qs.slot]
    q_pair_id = np.array(
        [
            f"portraits/{g}/{pp}" if a == len(activities) else f"identity_contrast/{g}/{pp}/{act_slug[a]}"
            for g, pp, a in zip(qs.gender, qs.pair_part, q_act.tolist())
        ],
        dtype=object,
    )
    q_pid = [enc(x) for x in q_pair_id]
    slot_json = [f"{enc(p)}, {enc(s)}, {enc(c)}" for p, s, c in zip(slots.paradigm, slots.subtask, slots.context)]
    para = np.tile(np.arange(reps), len(qs.slot))
    qid = [
        hashlib.sha1(f"[{q_pid[i]}, {slot_json[t]}, {x}]".encode()).hexdigest()[:16]
        for i, t, x in zip(q.tolist(), slot.tolist(), para.tolist())
    ]
    return q_pair_id, qid, para


def _options(qs: Any, d: _Draws, act_idx: np.ndarray, activities: list[str], m_fact: int):
    """The options as shown: two-way [left, right]; factuality the activity and three others, in the drawn order."""
    q, fact, perm = d.q, d.fact, d.perm
    # two-way options are the pair's [left, right] (one list per ordered pair and column, shared by its rows)
    lists = [np.empty(len(qs.pairs), dtype=object) for _ in range(3)]
    for col in lists:
        col[:] = [[x, y] for x, y in qs.pairs]
    pair = qs.pair[q]
    options, option_ids, candidates = (c[pair] for c in lists)
    fact_opts = [[act, *[a for a in activities if a != act][:3]] for act in activities]
    for i, row in enumerate(fact.tolist()):
        base = fact_opts[act_idx[row]]
        options[row] = [base[j] for j in perm[i]]
        option_ids[row], candidates[row] = [""] * m_fact, []
    return options, option_ids, candidates


def _frame(
    spec, slots, qs, d: _Draws, act_idx, activities, m_fact, q_pair_id, qid, para, options, option_ids, candidates
):
    """The responses-schema rows from the draws, ids and options."""
    q, slot, refused, k, fact = d.q, d.slot, d.refused, d.k, d.fact
    p_l, p_r, p_f = d.p_l, d.p_r, d.p_f
    is_fact_q_q = d.is_fact
    n = len(q)
    portrait = act_idx == len(activities)
    act_name = np.array([*activities, ""], dtype=object)[act_idx]
    pair_id = q_pair_id[q]
    paradigm = np.asarray(slots.paradigm, dtype=object)[slot]
    left, right = qs.left[q], qs.right[q]
    valid = ~refused
    choice = np.where(valid, np.where(k == 0, left, right), _NULL)
    fact_choice = [options[row][j] for row, j in zip(fact.tolist(), k[fact].tolist())]
    choice[fact] = np.where(valid[fact], np.array(fact_choice, dtype=object), _NULL)
    selected = np.where(valid & ~is_fact_q_q, np.where(k == 0, left, right), "").astype(object)
    chose_left = np.where(valid & (~is_fact_q_q | (m_fact == 2)), k == 0, _NULL)
    correct = np.full(n, None, dtype=object)
    correct[fact] = np.where(valid[fact], choice[fact] == act_name[fact], _NULL)
    probabilities = np.full(n, None, dtype=object)
    if spec.answer_mode == "score":
        probabilities[:] = np.column_stack([p_l, p_r]).tolist()
        probabilities[fact] = p_f.tolist()
        probabilities[~valid] = None
    template = np.array(
        ["stereotype/trait" if p == "stereotype" else f"{p}/{s}" for p, s in zip(slots.paradigm, slots.subtask)],
        dtype=object,
    )[slot]
    columns: dict[str, Any] = {
        "question_id": qid,
        "pair_id": pair_id,
        "config": np.where(portrait, "portraits", "identity_contrast").astype(object),
        "gender": qs.gender[q],
        "dimension": qs.dimension[q],
        "paradigm": paradigm,
        "subtask": np.asarray(slots.subtask, dtype=object)[slot],
        "template_id": template,
        "paraphrase": para.astype(np.int64),
        "option_style": np.full(n, "identity", dtype=object),
        "modality": np.full(n, "image", dtype=object),
        "context": np.asarray(slots.context, dtype=object)[slot],
        "identity_left": left,
        "identity_right": right,
        "activity_left": act_name,
        "activity_right": act_name,
        "key_left": qs.key_left[q],
        "key_right": qs.key_right[q],
        "options": options,
        "option_identities": option_ids,
        "choice": choice,
        "selected_identity": selected,
        "candidates": candidates,
        "probabilities": probabilities,
        "valid": valid,
        "raw": np.where(valid, choice, "I cannot tell."),
        "error": np.where(valid, "", "answer is not one of the options").astype(object),
        "direction": np.asarray(slots.direction, dtype=object)[slot],
        "trait_dimension": np.asarray(slots.trait_dimension, dtype=object)[slot],
        "chose_left": chose_left,
        "target_identity": np.where(is_fact_q_q, left, "").astype(object),
        "correct": correct,
        "seed": np.full(n, spec.seed, dtype=np.int64),
        "model_id": np.full(n, spec.model_id, dtype=object),
        # the simulator has no tokens and no API: probabilities (score mode) stand for the answers
        "option_logprobs": np.full(n, None, dtype=object),
        "attempts": np.full(n, None, dtype=object),
        "server_model": np.full(n, None, dtype=object),
    }
    return pd.DataFrame({c: columns[c] for c in RESPONSE_COLUMNS}, columns=list(RESPONSE_COLUMNS))


_DEFAULTS = SimSpec()


def record(spec: SimSpec, configs: list[str]) -> RunRecord:
    """The run record of a simulated run: the runner's record, marked simulated and placeholder."""
    config = "+".join(sorted(configs))
    # the wordings simulated: paraphrases 0..repeats-1 (at most the runner's three), identity options, the image
    variants = Variants(paraphrases=PARAPHRASES[: max(1, min(spec.repeats, len(PARAPHRASES)))])
    # the model's knobs: the two it always had, and any other of the model's that differs from the default
    model_fields = (
        "pair_image_sd",
        "render_sd",
        "p_left",
        "refusal_by_identity",
        "renders_per_cell",
        "answer_mode",
        "orders",
    )
    extra: dict[str, Any] = {"refusal_rate": spec.refusal_rate, "planted": [list(p) for p in spec.planted]}
    for f in fields(spec):
        if f.name in model_fields and getattr(spec, f.name) != getattr(_DEFAULTS, f.name):
            value = getattr(spec, f.name)
            extra[f.name] = [list(p) for p in value] if f.name == "refusal_by_identity" else value
    return RunRecord(
        settings=RunSettings(
            source="simulated",
            config=config,
            model=spec.model_id,
            seed=spec.seed,
            paradigms=tuple(spec.paradigms),
            variants=variants,
        ),
        template_hash="simulated",
        model=ModelProvenance(
            model_id=spec.model_id,
            adapter="simulated-random",
            model_revision="simulated",
            extra=extra,
        ),
        dataset=DatasetProvenance(source="simulated", config=config, revision="simulated", placeholder=True),
        simulated=True,
    )


def write_run(run_dir: str | Path, spec: SimSpec) -> Path:
    """Write a run folder (responses and run record) for ``spec``; returns the folder."""
    folder = RunFolder(run_dir)
    folder.path.mkdir(parents=True, exist_ok=True)
    frame = simulate(spec)
    folder.responses.write(pa.Table.from_pandas(frame, schema=RESPONSE_SCHEMA, preserve_index=False))
    folder.record.write(record(spec, sorted(set(frame["config"]))))
    return folder.path
