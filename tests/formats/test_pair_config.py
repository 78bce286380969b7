"""PairConfig: version 0 (load_dataset's keyword arguments as JSON) migrates; values are checked strictly."""

from __future__ import annotations

import numpy as np
import pytest

from vignette_bench.errors import VignetteError
from vignette_bench.formats.base import FormatError
from vignette_bench.formats.pair_config import DEFAULT_SEAM, DEFAULT_SIZE, PairConfig


def test_version_0_migrates() -> None:
    old = {"config": "identity_contrast", "gender": ["female"], "sample": 12, "seed": 3, "size": [320, 160], "seam": 8}
    config = PairConfig.from_json(old, "pairs.json")
    assert config.schema_version == PairConfig.SCHEMA_VERSION == 1
    assert config.gender == ("female",) and config.sample == 12 and config.size == (320, 160) and config.seam == 8
    assert config.orders == "rule" and config.reduced is True and config.identities is None
    assert PairConfig.from_json(config.to_json(), "pairs.json") == config  # round trip
    assert PairConfig.from_json(config.dumps(), "pairs.json") == config


def test_defaults_are_the_loaders() -> None:
    config = PairConfig(config="portraits")
    assert (config.size, config.seam, config.sample, config.seed) == (DEFAULT_SIZE, DEFAULT_SEAM, None, 0)
    assert config.filters().identity_match == "all" and "sample" not in config.filters().model_fields
    with pytest.raises(Exception):  # noqa: B017 - frozen
        config.seed = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"config": "identity_contrast", "sample": 0}, "sample"),
        ({"config": "identity_contrast", "sample": 10.5}, "sample"),
        ({"config": "identity_contrast", "seed": True}, "seed"),
        ({"config": "identity_contrast", "gender": 1}, "gender"),
        ({"config": "identity_contrast", "size": [672]}, "size"),
        ({"config": "identity_contrast", "seam": 672}, "seam"),
        ({"config": "nope"}, "config"),
        ({"config": "portraits", "colour": "red"}, "colour"),
    ],
)
def test_bad_values_name_their_key(data: dict, key: str) -> None:
    with pytest.raises(FormatError) as err:
        PairConfig.from_json(data, "pairs.json")
    assert err.value.key is not None and err.value.key.startswith(key)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"sample": 0}, "sample=0: expected a whole number"),
        ({"sample": 10.5}, "sample=10.5: expected a whole number"),
        ({"gender": 1}, "gender=1: expected a name or a list of names"),
        ({"size": (100, 0)}, r"size=\(100, 0\): expected \(width, height\)"),
        ({"size": (100, 50), "seam": 100}, "seam=100: seam 100 is not below the width 100"),
        ({"seed": -1}, "seed=-1: expected a whole number >= 0"),
        ({"orders": "random"}, "orders='random': expected one of rule, both, balanced"),
    ],
)
def test_from_options_names_the_option(options: dict, message: str) -> None:
    with pytest.raises(VignetteError, match=message):
        PairConfig.from_options(config="identity_contrast", **options)


def test_from_options_takes_what_load_dataset_callers_pass() -> None:
    config = PairConfig.from_options(
        config="identity_contrast", gender="female", identities=["muslim", "hindu"], sample=np.int64(4), size=[64, 32]
    )
    assert config.gender == ("female",) and config.identities == ("muslim", "hindu")
    assert config.sample == 4 and type(config.sample) is int and config.size == (64, 32)
