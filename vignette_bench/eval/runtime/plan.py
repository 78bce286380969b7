"""The question plan of a run's settings: its pairs (rows without images, a way to compose each pair's image,
what pins the dataset) and the questions `QuestionBuilder` asks of each pair.

`plan_for(settings)` is the one way there: `vignette run`, the leaderboard (`validate` rebuilds the plan,
`verify` re-asks part of it), the inspect_ai and lmms-eval tasks and `vignette explain` (a pair composed again
as the run composed it: `pair_composer`) all take it from here. It imports nothing of the runner (run.py), so
rebuilding a plan never loads the run loop (tests/eval/runtime/test_plan.py). Not to be confused with
planning.py: the power plan that chooses `--sample auto`'s number of pairs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vignette_bench.errors import VignetteError
from vignette_bench.eval.runtime.questions import Question, QuestionBuilder
from vignette_bench.formats.run_record import RunSettings
from vignette_bench.formats.selection import SelectionRecord
from vignette_bench.taxonomy import DATA_DIR, Taxonomy, load_taxonomy

if TYPE_CHECKING:
    from datasets import Dataset
    from PIL import Image

    import vignette

# The pair columns of a plan (vignette.features() without the image), in the order run's plan.parquet keeps them.
PAIR_COLUMNS = (
    "pair_id",
    "index",
    "config",
    "gender",
    "dimension",
    "identity_left",
    "identity_right",
    "form_left",
    "form_right",
    "activity_left",
    "activity_right",
    "key_left",
    "key_right",
    "swapped",
)


@dataclass
class PairSource:
    """Pair rows without images (the plan) and a way to compose one pair's image on demand."""

    rows: Dataset
    compose: Callable[[dict[str, Any]], Image.Image]
    revision: dict[str, Any]
    taxonomy: str | None = None  # the source's taxonomy folder (any fsspec URL); None: the packaged copy


@dataclass(frozen=True)
class Plan:
    """Every question a run with `settings` asks: its pairs, in plan order, and the builder that words them."""

    settings: RunSettings
    pairs: PairSource
    taxonomy: Taxonomy
    builder: QuestionBuilder

    def questions(self) -> Iterator[tuple[dict[str, Any], list[Question]]]:
        """(pair row, its questions) for every pair of the plan, in plan order (rows carry no image)."""
        for row in self.pairs.rows:
            yield row, self.builder(row)


def plan_for(settings: RunSettings, pairs: PairSource | None = None, taxonomy: Taxonomy | None = None) -> Plan:
    """The plan of `settings`: the pairs `open_pairs` selects (or `pairs`, e.g. `rows_source`'s), and the question
    builder over the source's taxonomy (or `taxonomy`, e.g. the run folder's copy) with the run's seed."""
    pairs = pairs if pairs is not None else open_pairs(settings)
    if taxonomy is None:
        taxonomy = load_taxonomy(pairs.taxonomy or str(DATA_DIR))
    return Plan(
        settings, pairs, taxonomy, QuestionBuilder(taxonomy, settings.seed, settings.paradigms, settings.variants)
    )


def pair_composer(settings: RunSettings) -> vignette.Composer:
    """What composes a run's pair images from its source: the run's image size, every other option the loader's."""
    import vignette

    source = vignette.Source(settings.source)
    size = (settings.image_size[0], settings.image_size[1])  # PairConfig.size (an imported run may join configs)
    return vignette.Composer(vignette.RenderReader(vignette.RenderIndex.load(source)), size)


def open_pairs(settings: RunSettings) -> PairSource:
    """The pairs of the run's config from its source, through vignette (the loading module)."""
    from datasets import Dataset

    import vignette
    from vignette_bench.loader.reader import MAX_INDEX_BYTES

    ds = vignette.load_dataset(settings.source, pair_config=settings.pair_config())
    table = ds.with_format("arrow")[:]
    rows = Dataset(table.select([c for c in PAIR_COLUMNS if c in table.column_names]))
    source = vignette.Source(settings.source)
    composer = pair_composer(settings)
    revision = {
        "selection": SelectionRecord.from_json(ds.info.description, "info.description").to_json(),
        # the index lists every render with its sha256: its digest pins the exact images asked about
        "index_sha256": hashlib.sha256(source.read(vignette.INDEX_PATH, max_bytes=MAX_INDEX_BYTES)).hexdigest(),
        "vignette_sha256": vignette.provenance_digest()[:16],  # every file that decides the pixels
        **_hub_revision(source.root),
    }
    return PairSource(
        rows, lambda row: composer.pair(row["key_left"], row["key_right"]), revision, source.url("taxonomy")
    )


def rows_source(rows: Dataset, revision: dict[str, Any] | None = None, taxonomy: str | None = None) -> PairSource:
    """Pairs given as rows that carry their own image, in their order: e.g. the protocol sample that plain
    ``datasets.load_dataset(SOURCE, "identity_contrast")`` returns (parquet, no code of ours). The plan is the
    rows' pair columns; a pair's image is its row's, decoded by datasets. `run(settings, ..., source=...)` then
    asks the same questions as over the lazy loader's rows (tests/loader/test_plain_protocol.py)."""
    from datasets import Dataset

    missing = [c for c in (*PAIR_COLUMNS, "image") if c not in rows.column_names]
    if missing:
        raise VignetteError(
            f"pair rows lack column(s) {missing}; expected the pair columns {list(PAIR_COLUMNS)} and image"
        )
    at = {pair_id: i for i, pair_id in enumerate(rows["pair_id"])}
    plan = Dataset(rows.remove_columns("image").with_format("arrow")[:].select(list(PAIR_COLUMNS)))
    return PairSource(plan, lambda row: rows[at[row["pair_id"]]]["image"], dict(revision or {}), taxonomy)


def source_placeholder(source: str | None) -> bool | None:
    """Whether a source's renders are drawn placeholders, read from its index; None when it cannot be read."""
    if not source:
        return None
    try:
        import fsspec
        import pandas as pd

        from vignette_bench.remote import http_options

        url = f"{str(source).rstrip('/')}/renders/index.parquet"
        with fsspec.open(url, "rb", **http_options(url)) as f:
            return bool(pd.read_parquet(f, columns=["placeholder"])["placeholder"].any())
    except Exception:  # a Hub id offline, or a moved folder: unknown, so not claimed
        return None


def _hub_revision(root: str) -> dict[str, Any]:
    """The Hub commit of a hf://datasets/ source, when the Hub can be asked (the index digest pins the data anyway)."""
    if not root.startswith("hf://datasets/"):
        return {}
    repo, _, revision = root[len("hf://datasets/") :].partition("@")
    try:
        from huggingface_hub import HfApi

        return {"hub_repo": repo, "hub_sha": HfApi().dataset_info(repo, revision=revision or None).sha}
    except Exception as e:  # noqa: BLE001 - offline or private: recorded, not fatal
        return {"hub_repo": repo, "hub_sha": None, "hub_sha_error": f"{type(e).__name__}: {e}"[:300]}
