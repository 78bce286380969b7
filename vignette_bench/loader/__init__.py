"""The loader: VIGNETTE pairs as Hugging Face datasets (users import it as the top-level `vignette`).

One job per module, imports pointing down (docs/layout.md):

* ``space``      the pair space: counting, enumerating, filtering and sampling pairs by arithmetic
* ``sources``    a source (folder, URL, Hub repo) read through one fsspec code path
* ``reader``     the render index (``renders/index.parquet``) and ranged, checked reads of renders
* ``compose``    two renders side by side with a soft seam
* ``filesystem`` ``vignette://`` paths (the image column) that compose a pair when opened
* ``load``       ``load_dataset``, ``open_pair``, ``info_table``
* ``cli``        ``vignette info`` and ``vignette show``
* ``provenance`` the digest of every source file that decides a pair's pixels

The loader imports `vignette_bench.formats`, `vignette_bench.errors` and `vignette_bench.taxonomy`
only (and third-party libraries), never the builder or the runtime. Docs: docs/vignette.md.
"""

from __future__ import annotations

from vignette_bench.loader.provenance import pixel_sources, provenance_digest

__all__ = ["pixel_sources", "provenance_digest"]
