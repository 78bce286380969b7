"""The board's official source: the one dataset a ranked entry may have answered, and what pins it.

A ranked protocol entry must name this source and its revision (the sha256 of its render index), and
the wording it was asked in (`adapter.template_hash`) and the taxonomy its questions were built from
must be this package's own (`template_hash`, `taxonomy_digest`). The maintainer names the source
(`--source`, default the published dataset); an entry never does. `validate`, `build` and `verify`
read no other source: an entry naming another one (a submitter's URL, a local folder, a copy with
edited templates) is listed as custom and never ranked, and its source is read only when the
maintainer asks (`--read-other-sources`), so an entry cannot make the board fetch from its server.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property


def taxonomy_digest(read: object) -> str:
    """sha256 over the taxonomy's files (name and bytes, in TAXONOMY_FILES order); `read(name)` gives a file's bytes."""
    from vignette_bench.taxonomy import TAXONOMY_FILES

    h = hashlib.sha256()
    for name in TAXONOMY_FILES:
        data = read(name)  # type: ignore[operator]
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def package_taxonomy_digest() -> str:
    from vignette_bench.taxonomy import DATA_DIR

    return taxonomy_digest(lambda name: (DATA_DIR / name).read_bytes())


def package_template_hash() -> str:
    from vignette_bench.eval.runtime.questions import template_hash
    from vignette_bench.taxonomy import load_taxonomy

    return template_hash(load_taxonomy())


def _root(source: str) -> str:
    """A source as its root URL (a folder made absolute), for comparing what two texts name; the text itself when
    it names nothing that resolves (it then equals no official source but its own spelling)."""
    from vignette_bench.loader.sources import resolve_source

    try:
        return resolve_source(source)
    except Exception:  # an unresolvable name is just a name: compared as written, never read
        return str(source).rstrip("/")


@dataclass(frozen=True)
class Official:
    """The maintainer's choice of source; `read_others`: also read sources that entries name (never ranked)."""

    source: str
    read_others: bool = False

    @classmethod
    def default(cls) -> Official:
        from vignette_bench.loader.sources import DEFAULT_SOURCE

        return cls(DEFAULT_SOURCE)

    @cached_property
    def root(self) -> str:
        return _root(self.source)

    def names(self, source: str) -> bool:
        """Whether an entry's `dataset.source` is this official source."""
        return _root(source) == self.root

    def may_read(self, source: str) -> bool:
        return self.names(source) or self.read_others

    @cached_property
    def template_hash(self) -> str:
        return package_template_hash()

    @cached_property
    def taxonomy_digest(self) -> str:
        return package_taxonomy_digest()

    @cached_property
    def source_taxonomy_digest(self) -> str | None:
        """The official source's own taxonomy folder's digest (the runner builds questions from it); None when it
        cannot be read."""
        import vignette

        src = vignette.Source(self.source)
        try:
            return taxonomy_digest(lambda name: src.read(f"taxonomy/{name}"))
        except Exception:  # no readable taxonomy: nothing built from it can match this package's
            return None

    def differences(self, entry: dict) -> list[str]:
        """Why a protocol entry on this source is not the official protocol ([]: it is): wording or taxonomy that
        differ from this package's."""
        out = []
        recorded = (entry.get("adapter") or {}).get("template_hash")
        if recorded != self.template_hash:
            out.append(f"template_hash {recorded!r} is not the official wording's {self.template_hash!r}")
        if self.source_taxonomy_digest != self.taxonomy_digest:
            out.append("the source's taxonomy is not this package's (taxonomy digest differs)")
        return out


def from_args(args: object) -> Official:
    """The `--source` / `--read-other-sources` options of validate, build and verify."""
    source = getattr(args, "source", None)
    base = Official.default() if not source else Official(str(source))
    return Official(base.source, bool(getattr(args, "read_other_sources", False)))
