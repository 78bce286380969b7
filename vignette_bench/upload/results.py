"""Plan the results upload: validated leaderboard entries and the responses they cite, as a Hub
dataset repo laid out as

    README.md                              the leaderboard card (vignette_bench/cards/leaderboard_card.md)
    entries/<entry_id>.json                location rewritten to hf://datasets/<repo>/runs/<entry_id>/...
    runs/<entry_id>/responses.parquet      the exact bytes the entry's sha256 names

Every entry is validated (numbers recomputed) before it is staged; nothing invalid is published.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from vignette_bench.upload.plan import CreateRepo, RemoteFile, Step, UploadFolder, local_files, split_changed
from vignette_bench.upload.targets import UploadError

CARD = Path(__file__).resolve().parents[1] / "cards" / "leaderboard_card.md"


def stage_results(entries_dir: Path, repo_id: str, stage: Path) -> Path:
    from vignette_bench.eval.leaderboard.boardfiles import KEYS_MAX_BYTES, VERIFICATION_MAX_BYTES
    from vignette_bench.eval.leaderboard.entry import EntryError, fetch_responses, validate, write_entry
    from vignette_bench.eval.leaderboard.verify import verification_path
    from vignette_bench.eval.runtime.folder import RunFolder

    entries_dir = Path(entries_dir)
    paths = sorted(entries_dir.glob("*.json")) if entries_dir.is_dir() else []
    if not paths:
        raise UploadError(f"{entries_dir}: no entries (*.json); make one with `vignette leaderboard create RUN_DIR`")
    if stage.exists():
        shutil.rmtree(stage)
    (stage / "entries").mkdir(parents=True)
    for path in paths:
        try:
            entry = validate(path).entry
        except EntryError as e:
            raise UploadError(f"{path}: rejected, not uploaded — {e}") from None
        eid = entry["entry_id"]
        # each entry's responses sit where a run folder keeps them, under the entry's id
        run = RunFolder(stage / "runs" / eid)
        run.write_responses_bytes(fetch_responses(entry, path))
        entry = json.loads(json.dumps(entry))
        entry["responses"]["location"] = f"hf://datasets/{repo_id}/{run.responses_path.relative_to(stage).as_posix()}"
        write_entry(entry, stage / "entries" / f"{eid}.json")
        verified = verification_path(path, eid)  # bound to the entry less its location: still valid after the move
        if verified.is_file() or verified.is_symlink():
            _board_file(verified, VERIFICATION_MAX_BYTES)
            (stage / "verifications").mkdir(exist_ok=True)
            shutil.copy2(verified, stage / "verifications" / f"{eid}.json")
    # the maintainer keys the board trusts, so the published verifications can be checked on their own
    from vignette_bench.eval.leaderboard.signing import keys_path

    keys = keys_path(entries_dir.parent)
    if (keys.is_file() or keys.is_symlink()) and (stage / "verifications").is_dir():
        _board_file(keys, KEYS_MAX_BYTES)
        shutil.copy2(keys, keys_path(stage))
    shutil.copy2(CARD, stage / "README.md")
    return stage


def _board_file(path: Path, max_bytes: int) -> None:
    """A record or key file is published only as the regular file it is: never through a link (which would
    publish whatever it points at), never over its cap (boardfiles.py)."""
    from vignette_bench.eval.leaderboard.boardfiles import problem

    refused = problem(path, max_bytes)
    if refused:
        raise UploadError(f"{path}: {refused}; not uploaded")


def results_plan(
    entries_dir: Path,
    repo_id: str,
    *,
    private: bool = False,
    stage: Path | None = None,
    remote: Mapping[str, RemoteFile] | None = None,
) -> list[Step]:
    if "/" not in repo_id:
        raise UploadError(f"--repo {repo_id!r}: give the results dataset repo as OWNER/NAME")
    folder = stage_results(Path(entries_dir), repo_id, Path(stage or tempfile.mkdtemp(prefix="vignette-results-")))
    files = local_files(folder, [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()])
    todo, skip = split_changed(repo_id, files, remote)
    steps: list[Step] = [CreateRepo(repo_id, "dataset", private)]
    if skip:
        steps.append(skip)
    steps.append(
        UploadFolder(
            repo_id,
            "dataset",
            folder,
            tuple(f.path_in_repo for f in todo),
            "Upload validated leaderboard entries and their responses",
        )
    )
    return steps
