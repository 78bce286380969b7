"""``vignette leaderboard check-pr --base BASE --head HEAD``: the board's CI on a pull request.

Run in the board repository (a git checkout holding both commits; `leaderboard init` makes one, whose workflow
runs this). Everything is read from git objects (``git ls-tree``, ``git cat-file``); nothing of the pull request
is checked out or followed, and the trusted parts come from BASE only:

1. ``maintainers.json`` is read from BASE (``git cat-file`` of the base tree's blob): a pull request that lists
   its own key and signs its own record stays self-reported.
2. HEAD may differ from BASE only by added files, and only ``entries/<entry_id>.json`` and
   ``runs/<entry_id>/responses.parquet`` (regular, non-executable files): any change to or deletion of an
   existing file (an entry, a verification, ``maintainers.json``, the workflow itself) is refused.
3. No symbolic link and no submodule anywhere in HEAD's board (the whole tree for a board repository; with
   ``--board DIR``, links the base has outside DIR are left alone); no file over its size cap (`boardfiles`).
4. Each added entry is named by its ``entry_id``, names its responses as ``../runs/<entry_id>/responses.parquet``
   (added with it) or an ``hf://`` URL, and duplicates no entry of BASE or of the pull request by entry id, by
   (model, model revision, configs, dataset revision) or by responses sha256.
5. HEAD's board, extracted from git into a temporary folder, is validated and built (`board.collect`, which also
   refuses the same answers under two names) with BASE's keys: any rejected entry fails the check.

Every refusal prints ``error: <file>: <reason>`` on stderr; the exit status is 0 when all pass and 1 when the
pull request is rejected (as `validate` and `build` exit 1 on a rejected entry); 2 when the check cannot run
(not a git repository, an unknown ref: `VignetteError`).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vignette_bench.errors import VignetteError
from vignette_bench.eval.leaderboard import boardfiles as bf
from vignette_bench.eval.leaderboard.official import Official

LINK, SUBMODULE, REGULAR = "120000", "160000", "100644"


class CheckError(VignetteError):
    """The check cannot run (git fails, a ref is unknown)."""


@dataclass(frozen=True)
class Blob:
    mode: str
    oid: str
    size: int  # -1 for a submodule


def git(repo: Path, *args: str) -> bytes:
    try:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=False)
    except OSError as e:
        raise CheckError(f"cannot run git ({e.strerror or type(e).__name__}); check-pr needs git") from None
    if done.returncode:
        why = (done.stderr.decode(errors="replace").strip().splitlines() or ["failed"])[-1]
        raise CheckError(f"git {args[0]} in {repo}: {why}")
    return done.stdout


def resolve(repo: Path, ref: str) -> str:
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}").decode().strip()
    except CheckError:
        raise CheckError(f"{ref!r}: not a commit of the git repository at {repo} (fetch it first)") from None


def tree(repo: Path, commit: str) -> dict[str, Blob]:
    """Every file of a commit's tree (recursively; links and submodules included) by path."""
    out: dict[str, Blob] = {}
    for record in git(repo, "ls-tree", "-r", "-l", "-z", "--full-tree", commit).split(b"\0"):
        if not record:
            continue
        meta, raw = record.split(b"\t", 1)
        mode, _kind, oid, size = meta.decode().split()
        out[raw.decode("utf-8", errors="replace")] = Blob(mode, oid, -1 if size == "-" else int(size))
    return out


def blob(repo: Path, b: Blob) -> bytes:
    return git(repo, "cat-file", "blob", b.oid)


def _entry_fields(data: bytes) -> dict[str, Any] | None:
    """The fields a duplicate is judged by, from an entry's bytes; None when it does not parse (validate says why)."""
    from vignette_bench.formats.base import parse_json

    try:
        e = parse_json(data, "entry")
        model, sample, ds = e["model"], e["sample"], e["dataset"]
        return {
            "entry id": str(e["entry_id"]),
            "model, revision, configs and dataset revision": (
                unicodedata.normalize("NFKC", str(model["id"])).casefold(),
                str(model["revision"]),
                "+".join(sorted(str(c) for c in sample["configs"])),
                str(ds["revision"]),
            ),
            "responses sha256": str(e["responses"]["sha256"]),
            "location": str(e["responses"]["location"]),
        }
    except Exception:
        return None


class Check:
    def __init__(self, repo: Path, base: str, head: str, board: str = ".", official: Official | None = None) -> None:
        self.repo = Path(repo)
        self.official = official  # the board's official source (the maintainer's --source; see official.py)
        try:
            git(self.repo, "rev-parse", "--git-dir")
        except CheckError:
            raise CheckError(f"{self.repo}: not a git repository; run check-pr in the board's repository") from None
        self.base, self.head = resolve(self.repo, base), resolve(self.repo, head)
        self.prefix = "" if board.strip("/") in ("", ".") else board.strip("/") + "/"
        self.refusals: list[tuple[str, str]] = []

    def refuse(self, path: str, reason: str) -> None:
        self.refusals.append((path, reason))

    def rel(self, path: str) -> str | None:
        return path[len(self.prefix) :] if path.startswith(self.prefix) else None

    def run(self, out: Path | None = None) -> list[tuple[str, str]]:
        old, new = tree(self.repo, self.base), tree(self.repo, self.head)
        self._tree(old, new)
        self._changes(old, new)
        self._added(old, {p: b for p, b in new.items() if p not in old})
        if self.refusals:  # an unsafe tree is never extracted nor built
            return self.refusals
        self._build(old, new, out)
        return self.refusals

    def _tree(self, old: dict[str, Blob], new: dict[str, Blob]) -> None:
        """Links and submodules anywhere in the board's folder (the whole tree when the board is the repository),
        and new ones anywhere; sizes of every new file. (Outside a board kept in a subfolder, the repository's
        own unchanged files, links included, are the base's: trusted, and never extracted.)"""
        for path, b in new.items():
            if old.get(path) == b and self.rel(path) is None:
                continue
            if b.mode == LINK:
                self.refuse(path, "a symbolic link; the board holds regular files only (nothing is followed)")
            elif b.mode == SUBMODULE:
                self.refuse(path, "a submodule; the board holds regular files only")
            else:
                rel = self.rel(path)
                limit = bf.cap(rel) if rel is not None else bf.OTHER_MAX_BYTES
                if b.size > limit:
                    self.refuse(path, f"{b.size:,} bytes, over the cap of {limit:,} for this file")

    def _changes(self, old: dict[str, Blob], new: dict[str, Blob]) -> None:
        for path, b in old.items():
            rel = self.rel(path) or ""
            what = (
                "maintainers.json (who is trusted changes only in a maintainer's own commit)"
                if rel == bf.KEYS
                else "an existing entry (entries are never rewritten; a new run is a new entry, once its old one is removed by a maintainer)"
                if bf.ENTRY.fullmatch(rel)
                else "a verification (only a maintainer commits verifications/)"
                if bf.VERIFICATION.fullmatch(rel)
                else "an existing file"
            )
            if path not in new:
                self.refuse(path, f"deletes {what}; a pull request may only add entries")
            elif new[path] != b:
                self.refuse(path, f"changes {what}; a pull request may only add entries")
        for path, b in new.items():
            if path in old or b.mode in (LINK, SUBMODULE):
                continue
            added = self.rel(path)
            if added is None or not (bf.ENTRY.fullmatch(added) or bf.RESPONSES.fullmatch(added)):
                self.refuse(
                    path,
                    f"a pull request may only add {self.prefix}entries/<entry_id>.json and "
                    f"{self.prefix}runs/<entry_id>/responses.parquet (entry ids: lower-case letters, digits, '-')",
                )
            elif b.mode != REGULAR:
                self.refuse(path, f"mode {b.mode}: add it as a plain, non-executable file ({REGULAR})")

    def _added(self, old: dict[str, Blob], added: dict[str, Blob]) -> None:
        """Names, locations and duplicates of the added entries, against BASE's entries and each other."""
        added = {p: b for p, b in added.items() if b.mode == REGULAR}  # links and the like are refused already
        entries = {
            m.group(1): p
            for p in added
            if (m := bf.ENTRY.fullmatch(self.rel(p) or "")) and added[p].size <= bf.ENTRY_MAX_BYTES
        }
        responses = {m.group(1): p for p in added if (m := bf.RESPONSES.fullmatch(self.rel(p) or ""))}
        for eid, path in sorted(responses.items()):
            if eid not in entries:
                self.refuse(path, f"responses without their entry {self.prefix}entries/{eid}.json in this pull request")
        known: dict[tuple[str, Any], str] = {}
        for path, b in sorted(old.items()):
            if bf.ENTRY.fullmatch(self.rel(path) or "") and b.mode == REGULAR and b.size <= bf.ENTRY_MAX_BYTES:
                fields = _entry_fields(blob(self.repo, b))
                for k, v in (fields or {}).items():
                    if k != "location":
                        known.setdefault((k, v), path)
        for eid, path in sorted(entries.items()):
            fields = _entry_fields(blob(self.repo, added[path]))
            if fields is None:
                continue  # validate names why, in the build below
            if fields["entry id"] != eid:
                self.refuse(
                    path,
                    f"holds entry_id {fields['entry id']!r}; an entry file is named by its own entry_id "
                    f"({fields['entry id']}.json)",
                )
            loc, want = fields["location"], f"../runs/{eid}/responses.parquet"
            if not loc.startswith("hf://") and (loc != want or eid not in responses):
                self.refuse(
                    path,
                    f"responses.location must be {want} (added in this pull request) or an hf:// URL "
                    "(vignette leaderboard create writes the first)",
                )
            for k, v in fields.items():
                if k == "location":
                    continue
                other = known.setdefault((k, v), path)
                if other != path:
                    self.refuse(
                        path,
                        f"the same {k} as {other}: a pull request adds new entries only (one per model, revision, "
                        "configs and dataset revision; one per set of responses)",
                    )

    def _build(self, old: dict[str, Blob], new: dict[str, Blob], out: Path | None) -> None:
        from vignette_bench.eval.leaderboard.board import build, collect

        with tempfile.TemporaryDirectory(prefix="vignette-check-pr-") as tmp:
            board = Path(tmp) / "board"
            for path, b in new.items():
                rel = self.rel(path)
                if rel is None or not (rel.startswith(("entries/", "runs/", "verifications/"))):
                    continue
                target = board / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(blob(self.repo, b))
            (board / "entries").mkdir(parents=True, exist_ok=True)
            keys = Path(tmp) / "base-maintainers.json"  # BASE's, never HEAD's
            base_keys = old.get(self.prefix + bf.KEYS)
            if base_keys is not None and base_keys.mode == REGULAR and base_keys.size <= bf.KEYS_MAX_BYTES:
                keys.write_bytes(blob(self.repo, base_keys))
            else:
                keys.write_text(json.dumps({"schema_version": 1, "keys": []}))
            accepted, rejected = collect(board / "entries", keys, self.official)
            for p, reason in rejected:
                self.refuse(self.prefix + p.relative_to(board).as_posix(), reason)
            if not self.refusals:
                build(accepted, out or Path(tmp) / "site")


def main(args: argparse.Namespace) -> int:
    """vignette leaderboard check-pr --base BASE --head HEAD: refuse a pull request that does more than add entries."""
    from vignette_bench.eval.leaderboard.official import from_args

    check = Check(Path.cwd(), args.base, args.head, args.board, from_args(args))
    refusals = check.run(Path(args.out) if args.out else None)
    from vignette_bench.eval.leaderboard.names import visible

    for path, reason in refusals:
        print(f"error: {visible(path)}: {visible(reason)}", file=sys.stderr)
    if refusals:
        print(
            f"pull request rejected: {len(refusals)} problem(s) ({check.base[:12]}..{check.head[:12]})", file=sys.stderr
        )
        return 1
    print(
        f"ok: {check.base[:12]}..{check.head[:12]} only adds entries that validate"
        + (f"; board -> {args.out}" if args.out else "")
    )
    return 0
