"""``vignette leaderboard init --out DIR``: a new board repository, with its CI.

The layout is `boardfiles`' (entries/, runs/, verifications/, maintainers.json) plus a README and a GitHub
Actions workflow whose check step runs ``vignette leaderboard check-pr``. The workflow is triggered by
``pull_request_target``, so GitHub runs the copy on the base branch: a pull request cannot edit its own check
(and check-pr refuses a change to the workflow anyway). Its token is read-only, and the pull request's commits
are fetched as git objects, never checked out nor run.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from vignette_bench import __version__
from vignette_bench.errors import VignetteError

WORKFLOW_PATH = ".github/workflows/board.yml"

WORKFLOW = """\
# The board's CI, written by `vignette leaderboard init` (docs/leaderboard.md of the vignette project).
# pull_request_target runs this file as the BASE branch has it: a pull request cannot change its own check.
# The token is read-only and the pull request's commits are fetched as git objects only, never checked out
# or run; `check-pr` reads them with git and refuses anything but added entries.
name: board
on:
  pull_request_target:
    types: [opened, synchronize, reopened]
permissions:
  contents: read
jobs:
  check-pr:
    runs-on: ubuntu-latest
    steps:
      - name: the base branch (trusted)
        uses: actions/checkout@v4
        with:
          ref: ${{{{ github.event.pull_request.base.sha }}}}
          fetch-depth: 0
          persist-credentials: false
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - name: install vignette (pinned here, never taken from the pull request)
        run: pip install "{package}"
      - name: fetch the pull request (objects only)
        env:
          PR: ${{{{ github.event.pull_request.number }}}}
        run: git fetch --no-tags origin "+refs/pull/$PR/head:refs/remotes/pr/head"
      - name: check-pr
        env:
          BASE_SHA: ${{{{ github.event.pull_request.base.sha }}}}
        run: vignette leaderboard check-pr --base "$BASE_SHA" --head refs/remotes/pr/head
"""

README = """\
# VIGNETTE leaderboard

One entry per model, configs and dataset revision: `entries/<entry_id>.json`, with its responses in
`runs/<entry_id>/responses.parquet` (or published at an `hf://` location). A maintainer's signed spot check is
`verifications/<entry_id>.json`, trusted only when signed by a key `maintainers.json` lists.

To submit: `vignette run ...`, then `vignette leaderboard create RUN --by YOU --out entries` in this
repository, commit the two new files on a branch, and open a pull request. CI (`.github/workflows/board.yml`)
runs `vignette leaderboard check-pr`: a pull request may only add entries; it may not change or delete any
file, add a link, or exceed the size caps. See docs/leaderboard.md of the vignette project.
"""


def package() -> str:
    known = __version__ != "0+unknown"
    return f"vignette-bench[report]=={__version__}" if known else "vignette-bench[report]"


def init(out: Path) -> list[Path]:
    """Write the template into `out` (which must not exist or be empty); returns the files written."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise VignetteError(f"{out}: exists and is not an empty folder; a board is made in a new folder")
    files = {
        "README.md": README,
        "maintainers.json": json.dumps({"schema_version": 1, "keys": []}, indent=2) + "\n",
        "entries/.gitkeep": "",
        "runs/.gitkeep": "",
        "verifications/.gitkeep": "",
        WORKFLOW_PATH: WORKFLOW.format(package=package()),
    }
    written = []
    for rel, text in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written


def main(args: argparse.Namespace) -> int:
    """vignette leaderboard init --out DIR: a new board repository (layout, README, CI workflow)."""
    for path in init(Path(args.out)):
        print(f"wrote {path}")
    print(
        f"next: cd {args.out} && git init && git add -A && git commit -m 'board'; add maintainer keys to "
        "maintainers.json (vignette leaderboard keygen) in a maintainer's own commit"
    )
    return 0
