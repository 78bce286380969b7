"""The pair space: exact sizes, index <-> pair round trips, filters, the left/right rule, sampling."""

from __future__ import annotations

from collections import Counter
from math import comb

import numpy as np
import pytest

import vignette
from vignette import PairSpace, VignetteError
from vignette_bench.taxonomy import load_taxonomy, slug

TAX = load_taxonomy()
K = len(TAX.activities)
EXPECTED_TOTALS = {
    "identity_activity_contrast": 30_164_250,
    "identity_contrast": 407_625,
    "activity_contrast": 912_975,
    "portraits": 5_435,
}


def _rule(config: str, n: int) -> int:
    """The combinatorial rule of DESIGN.md for one (gender, dimension) with n identities."""
    return {
        "identity_contrast": comb(n, 2) * K,
        "activity_contrast": n * comb(K, 2),
        "identity_activity_contrast": comb(n, 2) * K * (K - 1),
        "portraits": comb(n, 2),
    }[config]


@pytest.mark.parametrize("config", vignette.CONFIGS)
def test_sizes_are_exact_and_follow_the_rule_per_gender_and_dimension(config: str) -> None:
    space = PairSpace(TAX, config)
    assert len(space) == space.full_size == EXPECTED_TOTALS[config]
    sizes = space.sizes()
    for g in ("male", "female"):
        for d in TAX.dimensions:
            if d == "gender" and config != "activity_contrast":
                assert (g, d) not in sizes
                continue
            assert sizes[(g, d)] == _rule(config, len(TAX.identities_in(d, g))), (g, d)
    if config != "activity_contrast":  # the one man-woman pair
        assert sizes[("mixed", "gender")] == _rule(config, 2)
    assert sizes[("male", "physical_traits")] == _rule(config, 40)
    assert sizes[("female", "physical_traits")] == _rule(config, 37)


def test_total_over_all_configs() -> None:
    assert sum(len(PairSpace(TAX, c)) for c in vignette.CONFIGS) == 31_490_285
    info = vignette.info_table(TAX)
    assert info["total"] == 31_490_285
    assert info["configs"]["identity_contrast"]["total"] == 407_625


@pytest.mark.parametrize("config", vignette.CONFIGS)
def test_index_pair_index_round_trips(config: str) -> None:
    space = PairSpace(TAX, config)
    n = len(space)
    rng = np.random.default_rng(7)
    idx = np.unique(
        np.concatenate(
            [rng.integers(0, n, 20_000), [0, 1, n - 2, n - 1], space._offsets[:-1], space._offsets[1:-1] - 1]
        )
    )
    codes = space.decode(idx)
    assert (codes["index"] == idx).all()
    cols = space.columns(idx)
    for i in rng.choice(len(idx), 200, replace=False):
        spec = space[int(idx[i])]
        assert spec.index == idx[i]
        assert spec.__dict__ == {k: cols[k][int(i)].as_py() for k in spec.__dict__ if k != "config"} | {
            "config": config
        }
        assert space.parse_pair_id(spec.pair_id) == spec.index == space.index_of(spec)


def test_every_pair_is_a_distinct_valid_pair() -> None:
    """Whole identity_contrast and portraits spaces: bijective, same gender and dimension."""
    by_name = {i.name: i for i in TAX.identities}
    for config in ("identity_contrast", "portraits"):
        space = PairSpace(TAX, config)
        cols = {
            k: v.to_pylist() for k, v in space.columns(np.arange(len(space))).items() if k != "index" and k != "swapped"
        }
        assert len(set(cols["pair_id"])) == len(space)
        assert len(set(zip(cols["key_left"], cols["key_right"]))) == len(space)
        for i in range(0, len(space), 37):
            left, right = by_name[cols["identity_left"][i]], by_name[cols["identity_right"][i]]
            assert left.name != right.name and left.dimension == right.dimension == cols["dimension"][i]
            g = cols["gender"][i]
            if g == "mixed":
                assert {left.name, right.name} == {"man", "woman"}
                assert {cols["key_left"][i].split("-")[0], cols["key_right"][i].split("-")[0]} == {"male", "female"}
            else:
                assert cols["form_left"][i] == left.form(g) and cols["form_right"][i] == right.form(g)
                assert cols["key_left"][i].startswith(f"{g}-") and cols["key_right"][i].startswith(f"{g}-")
            assert cols["activity_left"][i] == cols["activity_right"][i]


def test_activity_contrast_pairs_one_identity_with_two_activities() -> None:
    space = PairSpace(TAX, "activity_contrast", gender="female", dimensions="gender")
    assert len(space) == comb(K, 2)
    specs = [space[i] for i in range(len(space))]
    assert {s.identity_left for s in specs} == {s.identity_right for s in specs} == {"woman"}
    assert all(s.activity_left != s.activity_right for s in specs)
    assert len({frozenset((s.activity_left, s.activity_right)) for s in specs}) == comb(K, 2)


def test_identity_activity_contrast_gives_each_identity_its_own_activity() -> None:
    space = PairSpace(TAX, "identity_activity_contrast", gender="mixed")
    assert len(space) == K * (K - 1)
    specs = [space[i] for i in range(0, len(space), 13)]
    assert all(s.activity_left != s.activity_right for s in specs)
    for s in specs:
        for side in ("left", "right"):
            identity, activity, key = (
                getattr(s, f"identity_{side}"),
                getattr(s, f"activity_{side}"),
                getattr(s, f"key_{side}"),
            )
            assert key == f"{'male' if identity == 'man' else 'female'}-gender-{identity}-{slug(activity)}"


def _brute(config: str, keep) -> set[int]:  # type: ignore[no-untyped-def]
    """Indices of the full space whose columns pass ``keep`` (columns as numpy arrays -> mask)."""
    space = PairSpace(TAX, config)
    arrow = space.columns(np.arange(len(space)))

    class Lazy(dict):  # converts only the columns the predicate reads
        def __missing__(self, k: str) -> np.ndarray:
            self[k] = arrow[k].to_numpy(zero_copy_only=False)
            return self[k]

    cols = Lazy()
    return set(cols["index"][keep(cols)].tolist())


def _indices(space: PairSpace) -> set[int]:
    idx = space.decode(np.arange(len(space)))["index"]
    assert len(set(idx.tolist())) == len(idx)
    return set(idx.tolist())


def test_filters_equal_brute_force_filtering() -> None:
    necessary = [a.name for a in TAX.activities if a.time_use == "necessary"]
    space = PairSpace(TAX, "identity_contrast", gender="female", dimensions=["religion", "age"], time_use="necessary")
    assert _indices(space) == _brute(
        "identity_contrast",
        lambda c: (
            (c["gender"] == "female")
            & np.isin(c["dimension"], ["religion", "age"])
            & np.isin(c["activity_left"], necessary)
        ),
    )
    picks = ["muslim", "hindu", "old", "young", "man", "woman"]
    space = PairSpace(TAX, "portraits", identities=picks)
    assert _indices(space) == _brute(
        "portraits", lambda c: np.isin(c["identity_left"], picks) & np.isin(c["identity_right"], picks)
    )
    assert ("mixed", "gender") in space.sizes()
    space = PairSpace(TAX, "portraits", identities=["muslim", "old"], identity_match="any")
    assert _indices(space) == _brute(
        "portraits",
        lambda c: np.isin(c["identity_left"], ["muslim", "old"]) | np.isin(c["identity_right"], ["muslim", "old"]),
    )
    acts = ["cooking", "driving", "teaching", "sleeping"]
    space = PairSpace(TAX, "activity_contrast", activities=acts, identities=["muslim", "man"])
    assert _indices(space) == _brute(
        "activity_contrast",
        lambda c: (
            np.isin(c["identity_left"], ["muslim", "man"])
            & np.isin(c["activity_left"], acts)
            & np.isin(c["activity_right"], acts)
        ),
    )
    assert len(space) == 3 * comb(4, 2)  # muslim (male, female) and man


def test_filtered_identity_activity_contrast_matches_the_full_space() -> None:
    space = PairSpace(
        TAX,
        "identity_activity_contrast",
        gender="male",
        dimensions="religion",
        activities=["cooking", "driving", "sleeping"],
    )
    assert len(space) == comb(12, 2) * 3 * 2
    full = PairSpace(TAX, "identity_activity_contrast")
    for i in range(len(space)):
        spec = space[i]
        assert full[spec.index] == spec
        assert spec.activity_left in ("cooking", "driving", "sleeping") and spec.activity_left != spec.activity_right


def test_near_synonyms_are_dropped_without_enumerating() -> None:
    synonyms = np.vectorize(TAX.are_near_synonyms)
    full = _brute("portraits", lambda c: np.ones(len(c["index"]), bool))
    kept = _brute("portraits", lambda c: ~synonyms(c["identity_left"], c["identity_right"]))
    space = PairSpace(TAX, "portraits", exclude_near_synonyms=True)
    assert _indices(space) == kept and len(kept) < len(full)
    big = PairSpace(TAX, "identity_activity_contrast", exclude_near_synonyms=True)
    assert len(big) == 30_164_250 - (len(full) - len(kept)) * K * (K - 1)
    assert (big.decode(np.arange(0, len(big), 101))["index"] < 30_164_250).all()
    any_ = PairSpace(
        TAX, "portraits", identities=["beautiful"], identity_match="any", exclude_near_synonyms=True, gender="female"
    )
    people = {(s.identity_left, s.identity_right) for s in (any_[i] for i in range(len(any_)))}
    assert len(people) == 37 - 1 - 2  # beautiful with every other female physical trait but attractive and cute
    assert all("beautiful" in p and not ({"attractive", "cute"} & set(p)) for p in people)


@pytest.mark.parametrize("config", ["portraits", "identity_contrast", "activity_contrast"])
def test_each_identity_stands_on_each_side_equally_often(config: str) -> None:
    space = PairSpace(TAX, config)
    c = space.decode(np.arange(len(space)))
    if config == "activity_contrast":  # the same person twice: the activities take sides
        who_left = c["block"] * K + np.where(c["swapped"], c["act2"], c["act1"])
        who_right = c["block"] * K + np.where(c["swapped"], c["act1"], c["act2"])
    else:
        who_left = c["block"] * 100 + np.where(c["swapped"], c["second"], c["first"])
        who_right = c["block"] * 100 + np.where(c["swapped"], c["first"], c["second"])
    n = max(who_left.max(), who_right.max()) + 1
    assert np.abs(np.bincount(who_left, minlength=n) - np.bincount(who_right, minlength=n)).max() <= 1


def test_side_balance_in_identity_activity_contrast() -> None:
    space = PairSpace(TAX, "identity_activity_contrast", dimensions="religion", gender="female")
    c = space.decode(np.arange(len(space)))
    left_member = np.where(c["swapped"], c["second"], c["first"])
    right_member = np.where(c["swapped"], c["first"], c["second"])
    assert (np.bincount(left_member) == np.bincount(right_member)).all()


def test_the_rule_does_not_depend_on_filters_and_both_orders_mirror_it() -> None:
    full = PairSpace(TAX, "identity_contrast")
    part = PairSpace(TAX, "identity_contrast", dimensions="age", activities=["cooking"])
    for i in range(len(part)):
        assert full[part[i].index] == part[i]
    both = PairSpace(TAX, "identity_contrast", dimensions="age", activities=["cooking"], orders="both")
    assert len(both) == 2 * len(part)
    for i in range(len(part)):
        a, b = both[2 * i], both[2 * i + 1]
        assert a == part[i] and b.index == a.index and b.swapped != a.swapped
        assert (b.identity_left, b.identity_right, b.key_left, b.key_right) == (
            a.identity_right,
            a.identity_left,
            a.key_right,
            a.key_left,
        )
        assert a.pair_id != b.pair_id and part.parse_pair_id(b.pair_id) == a.index


def test_sampling_is_seeded_distinct_and_balanced() -> None:
    space = PairSpace(TAX, "identity_activity_contrast")
    a, b, c = space.sample(3000, seed=1), space.sample(3000, seed=1), space.sample(3000, seed=2)
    assert (a == b).all() and not (a == c).all()
    assert len(np.unique(a)) == 3000 and (np.diff(a) > 0).all()
    cols = space.columns(a)
    counts = Counter(cols["identity_left"].to_pylist() + cols["identity_right"].to_pylist())
    # identities of small and large dimensions are represented alike (uniform sampling over pairs
    # would show each socioeconomic identity ~29x as often as each ability identity)
    ability = [counts[i.name] for i in TAX.identities_in("ability")]
    socio = [counts[i.name] for i in TAX.identities_in("socioeconomic")]
    assert 0.6 < np.mean(ability) / np.mean(socio) < 1.6
    acts = Counter(cols["activity_left"].to_pylist() + cols["activity_right"].to_pylist())
    assert len(acts) == K and max(acts.values()) <= 2 * min(acts.values())
    small = PairSpace(TAX, "portraits", dimensions="age")
    assert len(set(small.sample(len(small), seed=0).tolist())) == len(small)
    both = PairSpace(TAX, "portraits", dimensions="age", orders="both")
    s = both.sample(5, seed=0)
    assert len(s) == 10 and (s[1::2] == s[::2] + 1).all()
    with pytest.raises(VignetteError, match="cannot sample"):
        small.sample(len(small) + 1, seed=0)


def test_decode_is_vectorised_and_rejects_out_of_range() -> None:
    space = PairSpace(TAX, "identity_activity_contrast")
    codes = space.decode(np.arange(0, len(space), 997))
    assert len(codes["index"]) == len(range(0, len(space), 997))
    with pytest.raises(IndexError, match="out of range"):
        space.decode([len(space)])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"config": "identity_contrasts"}, "Closest match: 'identity_contrast'"),
        ({"config": "portraits", "identities": ["muslin"]}, "unknown identity 'muslin'. Closest match: 'muslim'"),
        ({"config": "portraits", "dimensions": ["religon"]}, "Closest match: 'religion'"),
        ({"config": "identity_contrast", "activities": ["cookin"]}, "Closest match: 'cooking'"),
        ({"config": "portraits", "gender": "females"}, "Closest match: 'female'"),
        ({"config": "identity_contrast", "time_use": ["fre"]}, "Closest match: 'free'"),
    ],
)
def test_unknown_names_list_the_valid_ones(kwargs: dict, match: str) -> None:
    config = kwargs.pop("config")
    with pytest.raises(VignetteError, match=match) as err:
        PairSpace(TAX, config, **kwargs)
    assert "Valid" in str(err.value)


def test_parse_pair_id_rejects_garbage() -> None:
    space = PairSpace(TAX, "identity_contrast")
    with pytest.raises(VignetteError, match="malformed pair_id"):
        space.parse_pair_id("portraits/male/age/old+young/portrait/L0")
    with pytest.raises(VignetteError, match="unknown identity or activity"):
        space.parse_pair_id("identity_contrast/male/age/old+martian/cooking/L0")


def test_compose_places_left_and_right_and_blends_the_seam() -> None:
    import io

    from PIL import Image

    def jpeg(color: tuple[int, int, int], size: tuple[int, int]) -> bytes:
        buf = io.BytesIO()
        Image.new("RGB", size, color).save(buf, format="JPEG", quality=95)
        return buf.getvalue()

    out = vignette.compose(jpeg((250, 0, 0), (512, 512)), jpeg((0, 0, 250), (300, 200)), size=(200, 100), seam=20)
    assert out.size == (200, 100) and out.format == "PNG"
    px = np.asarray(out).astype(int)
    assert (abs(px[:, :90] - [250, 0, 0]) <= 3).all() and (abs(px[:, 110:] - [0, 0, 250]) <= 3).all()
    red = px[50, 90:110, 0]
    assert (np.diff(red) < 0).all() and red[0] < 250 and red[-1] > 0  # a monotone cross-fade, no hard edge
    assert (
        vignette.compose(jpeg((1, 2, 3), (64, 64)), jpeg((1, 2, 3), (64, 64)), seam=0, image_format="JPEG").format
        == "JPEG"
    )
    with pytest.raises(VignetteError, match="seam"):
        vignette.compose(b"", b"", size=(100, 50), seam=100)


def _left_counts(cols: dict, side: str = "identity") -> tuple[Counter, Counter]:
    left = Counter(cols[f"{side}_left"].to_pylist())
    return left, left + Counter(cols[f"{side}_right"].to_pylist())


def test_balanced_orders_balance_sides_per_identity_in_a_sample() -> None:
    """The issue's measurement: a 2000-pair sample in the rule's order leaves identities far from half left
    (0.21-0.75 here); the balanced orientation keeps every identity within one offer of half."""
    rule = PairSpace(TAX, "identity_contrast")
    balanced = PairSpace(TAX, "identity_contrast", orders="balanced")
    r, b = rule.columns(rule.sample(2000, seed=0)), balanced.columns(balanced.sample(2000, seed=0))
    assert r["index"].to_pylist() == b["index"].to_pylist()  # the same pairs, only their sides differ
    (rl, rn), (bl, bn) = _left_counts(r), _left_counts(b)
    assert rn == bn
    rule_shares = [rl[i] / rn[i] for i in rn]
    assert min(rule_shares) < 0.3 and max(rule_shares) > 0.7  # the rule does not balance a sample
    assert max(abs(rl[i] - rn[i] / 2) for i in rn) >= 5
    assert all(abs(bl[i] - bn[i] / 2) <= 1 for i in bn)
    shares = [bl[i] / bn[i] for i in bn]
    assert 0.4 < min(shares) and max(shares) < 0.6
    # each (gender, identity) member, too: within half an offer (odd counts) of half
    left, right = balanced.side_units(balanced.sample(2000, seed=0))
    n = np.bincount(np.concatenate([left, right]))
    assert (np.abs(np.bincount(left, minlength=len(n)) - n / 2) <= 0.5).all()


@pytest.mark.parametrize("config", ["identity_activity_contrast", "activity_contrast", "portraits"])
def test_balanced_orders_in_every_config(config: str) -> None:
    space = PairSpace(TAX, config, orders="balanced")
    pos = space.sample(300, seed=3)
    assert len(pos) == 300 and (pos == space.sample(300, seed=3)).all()
    assert (pos >= space.n_pairs).any() and (pos < space.n_pairs).any()  # some pairs mirrored, some not
    left, right = space.side_units(pos)
    n = np.bincount(np.concatenate([left, right]))
    assert (np.abs(np.bincount(left, minlength=len(n)) - n / 2) <= 0.5).all()
    side = "activity" if config == "activity_contrast" else "identity"
    cols = space.columns(pos)
    lc, nc = _left_counts(cols, side)
    assert all(abs(lc[i] - nc[i] / 2) <= 1 for i in nc)
    # a mirrored position is the rule's pair with its sides exchanged
    rule = PairSpace(TAX, config)
    k = int(pos[pos >= space.n_pairs][0])
    a, m = rule[k - space.n_pairs], space[k]
    assert m.index == a.index and m.swapped != a.swapped and (m.key_left, m.key_right) == (a.key_right, a.key_left)
    assert rule.parse_pair_id(m.pair_id) == a.index


def test_balanced_whole_space_is_the_rule_order() -> None:
    rule = PairSpace(TAX, "identity_contrast", dimensions="age")
    balanced = PairSpace(TAX, "identity_contrast", dimensions="age", orders="balanced")
    assert len(balanced) == len(rule)
    all_rows = np.arange(len(rule))
    assert balanced.columns(all_rows)["pair_id"].equals(rule.columns(all_rows)["pair_id"])
    with pytest.raises(IndexError, match="out of range"):
        balanced.decode([2 * len(rule)])
    with pytest.raises(VignetteError, match="orders option"):
        PairSpace(TAX, "identity_contrast", orders="random")  # type: ignore[arg-type]


def test_euler_orientation_on_a_small_multigraph() -> None:
    rng = np.random.default_rng(0)
    u, v = rng.integers(0, 7, 200), rng.integers(0, 7, 200)
    keep = u != v
    u, v = u[keep], v[keep]
    forward = vignette._euler_orientation(u, v, np.random.default_rng(1))
    tail, head = np.where(forward, u, v), np.where(forward, v, u)
    out, inn = np.bincount(tail, minlength=7), np.bincount(head, minlength=7)
    assert (np.abs(out - inn) <= 1).all()
    assert ((out - inn) % 2 == (out + inn) % 2).all()  # zero exactly where the degree is even
