"""An upload as an explicit list of typed steps: printed by --dry-run, run by `execute`.

Building the plan touches only local files (and, when asked, a read-only listing of the
remote repo); executing it is the only place that writes to the Hub. Tests check the plan.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class LocalFile:
    path_in_repo: str
    local_path: Path
    size: int
    sha256: str
    git_sha1: str  # git blob id: what the Hub reports for a non-LFS file


@dataclass(frozen=True)
class RemoteFile:
    """What the Hub says of one file (from list_repo_tree(recursive=True, expand=True))."""

    path: str
    size: int
    lfs_sha256: str | None  # set for LFS/Xet-tracked files
    git_sha1: str | None  # the blob id (for LFS files, the pointer's id)


@dataclass(frozen=True)
class CreateRepo:
    repo_id: str
    repo_type: str  # dataset | space | model
    private: bool = False
    space_sdk: str | None = None


@dataclass(frozen=True)
class UploadFolder:
    """One resumable `HfApi.upload_folder` call restricted to the listed files."""

    repo_id: str
    repo_type: str
    folder: Path
    paths: tuple[str, ...]
    commit_message: str

    @property
    def bytes(self) -> int:
        return sum((self.folder / p).stat().st_size for p in self.paths)


@dataclass(frozen=True)
class SkipUnchanged:
    repo_id: str
    paths: tuple[str, ...]
    reason: str = "same sha256 (LFS) or git blob id on the Hub"


Step = CreateRepo | UploadFolder | SkipUnchanged


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def git_blob_sha1(path: Path, chunk: int = 1 << 20) -> str:
    """The id git (and the Hub) gives a regular file: sha1 of 'blob <size>\\0' + bytes."""
    h = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def local_files(folder: Path, paths: Iterable[str]) -> list[LocalFile]:
    out = []
    for p in sorted(paths):
        lp = folder / p
        out.append(LocalFile(p, lp, lp.stat().st_size, sha256_file(lp), git_blob_sha1(lp)))
    return out


def unchanged(local: LocalFile, remote: RemoteFile | None) -> bool:
    """True when the Hub already holds these exact bytes at this path."""
    if remote is None or remote.size != local.size:
        return False
    if remote.lfs_sha256 is not None:
        return remote.lfs_sha256 == local.sha256
    return remote.git_sha1 == local.git_sha1


def split_changed(
    repo_id: str, files: list[LocalFile], remote: Mapping[str, RemoteFile] | None
) -> tuple[list[LocalFile], SkipUnchanged | None]:
    """Files to upload, and one skip step for those already on the Hub (None when nothing is skipped)."""
    if remote is None:
        return files, None
    keep = [f for f in files if not unchanged(f, remote.get(f.path_in_repo))]
    skipped = tuple(f.path_in_repo for f in files if f not in keep)
    return keep, (SkipUnchanged(repo_id, skipped) if skipped else None)


def remote_listing(api, repo_id: str, repo_type: str) -> dict[str, RemoteFile] | None:
    """Read-only listing of the remote repo; None when it does not exist yet."""
    from huggingface_hub.errors import RepositoryNotFoundError
    from huggingface_hub.hf_api import RepoFile

    try:
        entries = list(api.list_repo_tree(repo_id, recursive=True, expand=True, repo_type=repo_type))
    except RepositoryNotFoundError:
        return None
    return {e.path: to_remote(e) for e in entries if isinstance(e, RepoFile)}


def to_remote(entry) -> RemoteFile:
    """A huggingface_hub RepoFile as our RemoteFile."""
    return RemoteFile(entry.path, entry.size, entry.lfs.sha256 if entry.lfs else None, entry.blob_id)


def describe(steps: list[Step]) -> str:
    """Human-readable plan (what --dry-run prints). Never includes a token: steps hold none."""
    lines = []
    for i, s in enumerate(steps, 1):
        if isinstance(s, CreateRepo):
            extra = f", sdk={s.space_sdk}" if s.space_sdk else ""
            lines.append(f"{i}. create_repo {s.repo_type}:{s.repo_id} (exist_ok, private={s.private}{extra})")
        elif isinstance(s, UploadFolder):
            lines.append(
                f"{i}. upload_folder {s.repo_type}:{s.repo_id} from {s.folder}: "
                f"{len(s.paths)} file(s), {s.bytes:,} bytes — {s.commit_message!r}"
            )
            lines += [f"     + {p}" for p in s.paths]
        elif isinstance(s, SkipUnchanged):
            lines.append(f"{i}. skip {len(s.paths)} unchanged file(s) in {s.repo_id} ({s.reason})")
            lines += [f"     = {p}" for p in s.paths]
    return "\n".join(lines)


def execute(steps: list[Step], api) -> None:
    """Run the plan against the Hub with an authenticated HfApi. upload_folder is resumable:
    re-running the same plan after an interruption re-sends only what was not committed."""
    for s in steps:
        if isinstance(s, CreateRepo):
            api.create_repo(s.repo_id, repo_type=s.repo_type, private=s.private, exist_ok=True, space_sdk=s.space_sdk)
        elif isinstance(s, UploadFolder) and s.paths:
            # Paths are [a-z0-9_./-] only (render keys, metric names), so each is a literal glob.
            api.upload_folder(
                repo_id=s.repo_id,
                repo_type=s.repo_type,
                folder_path=s.folder,
                allow_patterns=list(s.paths),
                commit_message=s.commit_message,
            )
