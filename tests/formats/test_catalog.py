"""Every format of the catalog is a Format with a version, a file, a migration test, and docs/FORMATS.md is current."""

from pathlib import Path

import pytest

from vignette_bench.formats import docs
from vignette_bench.formats.base import Format
from vignette_bench.formats.catalog import FORMATS

HERE = Path(__file__).parent


@pytest.mark.parametrize("name", FORMATS)
def test_each_format_is_complete(name):
    cls = docs.load(name)
    assert issubclass(cls, Format) and cls.SCHEMA_VERSION >= 1 and cls.FILE and cls.__doc__
    assert cls.json_schema()["type"] == "object"
    module = name.partition(":")[0].rsplit(".", 1)[-1]
    assert (HERE / f"test_{module}.py").is_file(), f"tests/formats/test_{module}.py: migrate every older version"


def test_generated_files_are_current():
    for path, text in docs.outputs().items():
        assert path.read_text() == text, f"{path}: run python -m vignette_bench.formats.docs"


def test_check_flag(tmp_path, monkeypatch):
    assert docs.main(["--check"]) == 0
    monkeypatch.setattr(docs, "outputs", lambda: {tmp_path / "FORMATS.md": docs.render()})
    assert docs.main(["--check"]) == 1
