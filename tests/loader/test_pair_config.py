"""load_dataset's options as one PairConfig: bad values are named at load time; pair_config= gives the same rows."""

from __future__ import annotations

import inspect
import json
import shutil
from pathlib import Path

import pytest

import vignette
import vignette_bench
from vignette import PairConfig, VignetteError
from vignette_bench.errors import VignetteError as BaseVignetteError
from vignette_bench.formats.render_index import variant_key
from vignette_bench.formats.selection import SelectionRecord
from vignette_bench.loader import compose, filesystem, load, provenance, reader, space


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from vignette_bench.dataset_builder.sample import build_sample

    return build_sample(tmp_path_factory.mktemp("pair_config") / "src")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"sample": 0}, r"^sample=0: "),
        ({"sample": 10.5}, r"^sample=10.5: "),
        ({"gender": 1}, r"^gender=1: "),
        ({"num_shards": 0}, r"^num_shards=0: "),
        ({"size": (1, 336)}, r"^size=\(1, 336\): "),
        ({"size": "672x336"}, r"^size='672x336': "),
        ({"seam": 672}, r"^seam=672: "),
        ({"seam": -2}, r"^seam=-2: "),
        ({"seed": "3"}, r"^seed='3': "),
        ({"cache_size": -1}, r"^cache_size=-1: "),
    ],
)
def test_bad_options_are_named_before_anything_is_read(options: dict, message: str) -> None:
    # the source does not exist: the option is refused before the source is looked at
    with pytest.raises(VignetteError, match=message):
        vignette.load_dataset("/nonexistent/source", "identity_contrast", **options)


def test_pair_config_gives_the_keyword_arguments_rows(source: Path) -> None:
    kw = {"gender": "female", "dimensions": ["religion"], "sample": 6, "seed": 2, "orders": "both", "size": (64, 32)}
    by_keywords = vignette.load_dataset(source, "identity_contrast", keep_in_memory=True, **kw)
    config = PairConfig.from_options(config="identity_contrast", **kw)
    by_config = vignette.load_dataset(source, pair_config=config, keep_in_memory=True)
    assert by_config["pair_id"] == by_keywords["pair_id"] and by_config[0]["image"].size == (64, 32)
    assert by_config.info.description == by_keywords.info.description
    record = SelectionRecord.from_json(by_config.info.description, "info.description")
    assert record.sample == 6 and record.filters.dimensions == ("religion",) and record.size == (64, 32)
    assert json.loads(by_config.info.description)["schema_version"] == SelectionRecord.SCHEMA_VERSION
    with pytest.raises(VignetteError, match="differs from pair_config.config"):
        vignette.load_dataset(source, "portraits", pair_config=config)
    with pytest.raises(VignetteError, match=r"\['seed'\] given beside pair_config="):
        vignette.load_dataset(source, pair_config=config, seed=5)


def test_errors_share_the_package_base() -> None:
    assert vignette.VignetteError is BaseVignetteError
    for cls in (vignette.SourceError, vignette.MissingRenderError, vignette.CorruptRenderError):
        assert issubclass(cls, BaseVignetteError)
    assert issubclass(vignette.MissingRenderError, LookupError)


def test_provenance_covers_every_file_that_decides_pixels(tmp_path: Path) -> None:
    package = Path(vignette_bench.__file__).resolve().parent
    files = provenance.pixel_sources()
    assert Path(inspect.getsourcefile(variant_key) or "").resolve() in files  # which render a pair shows
    assert Path(inspect.getsourcefile(PairConfig) or "").resolve() in files
    for module in (space, reader, compose, filesystem, load):
        assert Path(module.__file__ or "").resolve() in files
    assert Path(vignette.__file__).resolve() in files
    # a copy of the tree: the same bytes give the same digest; changing variant_key's module changes it
    root = tmp_path / "tree"
    for f in files:
        dst = root / f.relative_to(package.parent)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, dst)
    copy = root / "vignette_bench"
    assert provenance.provenance_digest(copy) == vignette.provenance_digest()
    rule = root / Path(inspect.getsourcefile(variant_key) or "").resolve().relative_to(package.parent)
    rule.write_text(rule.read_text().replace('f"{base}-v{variant}"', 'f"{base}-w{variant}"'))
    assert provenance.provenance_digest(copy) != vignette.provenance_digest()


def test_an_unknown_keyword_is_named_with_the_valid_ones() -> None:
    # load_dataset(path, name=None, *, pair_config=None, **options): the options are PairConfig's fields and the
    # serving ones; anything else is refused before the source is read, as datasets refuses a config kwarg
    with pytest.raises(VignetteError, match=r"unknown option\(s\) \['colour'\]") as err:
        vignette.load_dataset("/nonexistent/source", "identity_contrast", colour="red")
    for valid in ("gender", "identity_match", "sample", "size", "reduced", "split", "streaming", "cache_dir"):
        assert f"'{valid}'" in str(err.value)
    with pytest.raises(VignetteError, match=r"unknown pair option\(s\) \['genders'\]; known: \['activities'"):
        vignette.PairSpace(vignette.load_taxonomy(), "portraits", genders="female")
