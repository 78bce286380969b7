"""Cards: the dataset card sections (pair counts from vignette's pair space), the leaderboard card
describing exactly the results repo, and links to the metric cards."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests import REPO_ROOT
from vignette_bench.upload.card import END, START, complete_card, pair_counts
from vignette_bench.upload.targets import dataset_files, front_matter

ROOT = REPO_ROOT


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("card") / "src"
    subprocess.run(
        [sys.executable, "-m", "vignette_bench", "build", "sample", "--out", str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=300,
    )
    return out


def test_card_sections_are_rendered_once_with_real_counts(source):
    import vignette
    from vignette_bench.taxonomy import load_taxonomy

    complete_card(source)
    complete_card(source)  # a rerun replaces, never repeats
    text = (source / "README.md").read_text()
    assert text.count(START) == 1 and text.count(END) == 1
    assert "{{" not in text  # every placeholder filled
    full = vignette.info_table(load_taxonomy())
    counts = pair_counts(source)
    for config, (n_full, n_here) in counts.items():
        assert n_full == full["configs"][config]["total"]
        assert 0 < n_here < n_full
        assert f"| `{config}` |" in text and f"{n_full:,}" in text
    assert 31_000_000 < sum(f for f, _ in counts.values()) < 32_000_000  # "about 31.5M pairs"
    for needed in (
        "Ethical cautions",
        "Intended use",
        "Taxonomy: sources and license",
        "How the renders were made",
        "What is placeholder here",
        "drawn placeholders",
    ):
        assert needed in text, needed
    assert text.rstrip().splitlines()[-1] != END and text.index(END) < text.index("## Citation")
    meta = front_matter(source / "README.md")
    assert {c["config_name"] for c in meta["configs"]} >= {"index"}


def test_completed_card_still_loads_and_uploads_exactly_its_files(source):
    import datasets

    complete_card(source)
    assert len(datasets.load_dataset(str(source), "index", split="test")) > 0
    files = dataset_files(source)
    assert files == sorted(p.relative_to(source).as_posix() for p in source.rglob("*") if p.is_file())


def test_leaderboard_card_describes_the_results_layout():
    meta = front_matter(ROOT / "vignette_bench" / "cards" / "leaderboard_card.md")
    paths = {c["config_name"]: c["data_files"][0]["path"] for c in meta["configs"]}
    assert paths == {"entries": "entries/*.json", "responses": "runs/*/responses.parquet"}
    schema_fields = set(
        __import__("json").loads((ROOT / "vignette_bench" / "eval" / "leaderboard" / "entry.schema.json").read_text())[
            "properties"
        ]
    )
    text = (ROOT / "vignette_bench" / "cards" / "leaderboard_card.md").read_text()
    for field in schema_fields - {"schema_version", "entry_id"}:
        assert f"`{field}" in text, f"leaderboard card does not explain {field}"


def test_card_index_links_resolve():
    text = (ROOT / "vignette_bench" / "cards" / "README.md").read_text()
    links = re.findall(r"\]\(([^)]+)\)", text)
    assert len(links) >= 6
    missing = [link for link in links if not (ROOT / "vignette_bench" / "cards" / link).resolve().is_file()]
    assert not missing, f"vignette_bench/cards/README.md links to missing files: {missing}"
