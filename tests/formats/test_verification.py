"""Verification: versions 0 (no schema_version, as verify wrote it before) and 1 migrate unsigned, and version 2
without the subset seed and endpoint of version 3 (so it verifies nothing: verify.verification_status); a bad file
names its key. MaintainerKeys: a hand-written file without schema_version reads."""

import json

import pytest

from vignette_bench.formats.base import FormatError
from vignette_bench.formats.verification import MaintainerKeys, Verification

# a verifications/<entry_id>.json as `vignette leaderboard verify` wrote it before the record had a version
V0 = {
    "entry_id": "reference-uniform-random--1a2b3c4d--cccf36f2",
    "entry_digest": "d" * 64,
    "model_spec": "random",
    "mode": "greedy",
    "n_checked": 20,
    "n_agreed": 20,
    "agreement": 1.0,
    "max_prob_diff": None,
    "prob_tol": 0.02,
    "near_tie_flips": 0,
    "p_value": None,
    "passed": True,
    "reason": "20 of 20 re-asked answers equal the recorded ones (passes at >= 95%)",
    "date": "2026-11-20T10:00:00+00:00",
    "hardware": "x86_64 Linux, python 3.11.7, cpu, torch 2.13.0+cpu",
    "mismatches": [{"question_id": "q1", "recorded": "the man", "re_asked": None}],
}


UNSIGNED = {
    "model_id": None,
    "model_revision": None,
    "signed_by": None,
    "signature": None,
    "subset_seed": None,
    "endpoint": None,
}


@pytest.mark.parametrize("version", [0, 1, 2])
def test_older_versions_migrate_unsigned_without_losing_a_key(version):
    old = {**V0, "schema_version": version} if version else V0
    v = Verification.from_json(json.dumps(old), "v.json")
    assert v.schema_version == 3 and v.passed and v.mismatches[0].re_asked is None
    assert v.to_json() == {**V0, "schema_version": 3, **UNSIGNED}  # unsigned: never shown as verified
    assert Verification.from_json(v.dumps(), "v.json") == v


def test_maintainer_keys_without_a_version_read():
    keys = {"keys": [{"name": "alice", "public_key": "A" * 43 + "="}]}
    assert MaintainerKeys.from_json(json.dumps(keys), "maintainers.json").keys[0].name == "alice"
    with pytest.raises(FormatError) as caught:
        MaintainerKeys.from_json(json.dumps({"keys": [{"name": "bob", "public_key": "short"}]}), "maintainers.json")
    assert caught.value.key == "keys[0].public_key"


@pytest.mark.parametrize(
    "change, key",
    [
        (lambda d: d.update(mode="guess"), "mode"),
        (lambda d: d.update(n_checked="20"), "n_checked"),
        (lambda d: d["mismatches"][0].update(extra=1), "mismatches[0].extra"),
        (lambda d: d.pop("entry_digest"), "entry_digest"),
        (lambda d: d.update(signed_by="not-a-key-id"), "signed_by"),
    ],
)
def test_a_bad_record_names_its_key(change, key):
    data = json.loads(json.dumps(V0))
    change(data)
    with pytest.raises(FormatError) as caught:
        Verification.from_json(data, "v.json")
    assert caught.value.key == key and caught.value.file == "v.json"
