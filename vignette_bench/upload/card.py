"""Complete a source's dataset card with vignette_bench/cards/dataset_card_sections.md.

The builder writes README.md (YAML `configs:`, contents, layout) from vignette_bench/cards/dataset_card_template.md;
this adds, between markers (so a rerun replaces rather than repeats), what only the rest of the
project knows: the size of every pair config from vignette's pair space (full taxonomy and this
source), the pair-row features, how the renders were made, taxonomy sources and license,
intended use, the papers' ethical cautions, and what in the source is placeholder.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

SECTIONS = Path(__file__).resolve().parents[1] / "cards" / "dataset_card_sections.md"
START, END = "<!-- vignette:sections:start", "<!-- vignette:sections:end -->"
PAIR_RULES = {
    "identity_contrast": "two identities, same activity",
    "activity_contrast": "one identity, two activities",
    "identity_activity_contrast": "two identities, each its own activity",
    "portraits": "two identities, no activity",
}


def pair_counts(source: Path) -> dict[str, tuple[int, int]]:
    """config -> (pairs for the full taxonomy, pairs this source's renders can compose)."""
    import vignette
    from vignette_bench.taxonomy import load_taxonomy

    full = vignette.info_table(load_taxonomy())
    index = vignette.RenderIndex.load(vignette.Source(str(source)))
    here = vignette.info_table(load_taxonomy(index.source.url("taxonomy")), index.coverage)
    return {c: (full["configs"][c]["total"], here["configs"][c]["total"]) for c in vignette.CONFIGS}


def sections_text(source: Path) -> str:
    source = Path(source)
    index = pd.read_parquet(source / "renders" / "index.parquet", columns=["placeholder", "model_id"])
    counts = pair_counts(source)
    rows = "\n".join(f"| `{c}` | {PAIR_RULES[c]} | {full:,} | {here:,} |" for c, (full, here) in counts.items())
    n_ph = int(index["placeholder"].sum())
    news = sorted((source / "news").glob("*.parquet")) if (source / "news").is_dir() else []
    if n_ph:
        placeholder = (
            f"**All of it that is marked so:** {n_ph} of {len(index)} renders are drawn placeholders "
            "(the word PLACEHOLDER is in the image and `placeholder: true` in the record), made without a "
            "text-to-image model so the tools can be tested offline. Pair counts above are real arithmetic "
            "over these renders; any result computed on them measures the pipeline, not a model's bias."
        )
    else:
        placeholder = "Nothing: every render was made by the text-to-image model named in its record."
    if news:
        placeholder += (
            " The `news` config here holds "
            + ", ".join(p.name for p in news)
            + "; when built by `vignette build news --placeholder` its images are placeholders and its "
            "questions ours, not the paper's (unreleased) news data."
        )
    values = {
        "protocol_stored": _protocol_stored(source),
        "config_rows": rows,
        "news_note": " (the news subset in `news`)" if news else "",
        "models": ", ".join(sorted(set(index["model_id"]))),
        "n_placeholder": str(n_ph),
        "n_renders": str(len(index)),
        "placeholder_section": placeholder,
    }
    text = SECTIONS.read_text()
    for k, v in values.items():
        text = text.replace("{{" + k + "}}", v)
    return text


def _protocol_stored(source: Path) -> str:
    """The sentence naming the protocol configs stored with their images, or nothing when there are none."""
    from vignette_bench.dataset_builder.protocol_manifest import PROTOCOL_DIR, complete_configs, read_manifest

    have = [(c, (read_manifest(source / PROTOCOL_DIR / c) or {}).get("rows", 0)) for c in complete_configs(source)]
    if not have:
        return ""
    listed = ", ".join(f"`{c}` ({n:,} pairs)" for c, n in have)
    return (
        f" Stored with their images: {listed}, the leaderboard protocol's sample of those configs (the pairs "
        "and side orders a `vignette-protocol/1` run asks about), each pair exactly the pixels `vignette.load_dataset` "
        "composes."
    )


def complete_card(source: Path) -> Path:
    """Insert (or replace) the sections in SOURCE/README.md, atomically."""
    readme = Path(source) / "README.md"
    if not readme.is_file():
        raise FileNotFoundError(f"{readme}: no dataset card; build the source first (vignette build sample/shard)")
    text = readme.read_text()
    if START in text and END in text:
        text = text[: text.index(START)].rstrip() + "\n\n" + text[text.index(END) + len(END) :].lstrip()
    # Before the builder's "## Citation" when there is one, so the citation stays last.
    block = sections_text(source).strip() + "\n"
    at = text.find("\n## Citation")
    text = (text[:at].rstrip() + "\n\n" + block + text[at:]) if at >= 0 else (text.rstrip() + "\n\n" + block)
    tmp = readme.with_name(f".README.md.tmp-{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, readme)
    return readme
