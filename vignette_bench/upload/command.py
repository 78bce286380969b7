"""`vignette upload dataset|metrics|results|card`: push a source, the metric modules or the leaderboard results
to the Hub, or complete a source's dataset card (docs/upload.md).

Each push builds its plan from local files first; ``--dry-run`` prints it and stops. The token comes from
HF_TOKEN or the saved Hub login (huggingface_hub.get_token); it is handed to HfApi and never printed, logged
or written.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from vignette_bench.upload.arguments import (  # noqa: F401  re-exported: each job's parser (cli.py reads them there)
    card_add_arguments,
    dataset_add_arguments,
    metrics_add_arguments,
    results_add_arguments,
)
from vignette_bench.upload.plan import Step, describe, execute, remote_listing
from vignette_bench.upload.targets import UploadError, build_project_wheel, dataset_plan, metric_names, metrics_plan


def _api(dry_run: bool):
    from huggingface_hub import HfApi, get_token

    token = get_token()
    if token is None and not dry_run:
        raise UploadError("no Hub token: set HF_TOKEN or run `hf auth login` (a write token is needed)")
    return HfApi(token=token)


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in {"1", "true", "yes", "on"}


def _listing(api, repo_id: str, repo_type: str, consult: bool):
    """Remote files for hash comparison, or None (repo missing, offline, or not asked)."""
    if not consult or _offline():
        return None
    return remote_listing(api, repo_id, repo_type)


def _push(args: argparse.Namespace, plan: Callable[[object, bool], list[Step]]) -> int:
    """Build the plan (`plan(api, consult)`: consult the remote listing to skip unchanged files), print it, and
    send it unless --dry-run. A Hub error prints its type and message only (they never carry the token)."""
    try:
        api = _api(args.dry_run)
        steps = plan(api, not args.dry_run or api.token is not None)
        print(("DRY RUN — nothing is sent. " if args.dry_run else "") + f"Plan ({len(steps)} steps):")
        print(describe(steps))
        if not args.dry_run:
            execute(steps, api)
            print("done")
    except UploadError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except Exception as e:
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    return 0


def dataset_main(args: argparse.Namespace) -> int:
    """Push a source folder (card, taxonomy, renders, index, news, protocol sample) to a Hub dataset repo.

    The card must describe exactly the files sent (docs/upload.md); run `vignette upload card --source DIR`
    first:

    vignette upload dataset --source sample_src --repo ORG/vignette --dry-run
    """
    source = Path(args.source)

    def plan(api, consult: bool) -> list[Step]:
        steps = dataset_plan(
            source, args.repo, private=args.private, remote=_listing(api, args.repo, "dataset", consult)
        )
        from vignette_bench.upload.card import START

        if START not in (source / "README.md").read_text():
            print(
                f"note: {source}/README.md lacks the pair counts, cautions and placeholder sections; "
                f"run `vignette upload card --source {args.source}` first",
                file=sys.stderr,
            )
        return steps

    return _push(args, plan)


def metrics_main(args: argparse.Namespace) -> int:
    """Push each metric module as a gradio Space, OWNER/<name>, carrying the vignette-bench wheel it installs.

    vignette upload metrics --repo ORG --dry-run
    """

    def plan(api, consult: bool) -> list[Step]:
        stage = Path(args.stage or tempfile.mkdtemp(prefix="vignette-spaces-"))
        remotes = (
            {
                f"{args.repo}/{n}": _listing(api, f"{args.repo}/{n}", "space", consult)
                for n in metric_names(Path(args.metrics))
            }
            if "/" not in args.repo
            else {}
        )
        wheel = Path(args.wheel) if args.wheel else build_project_wheel(stage / "_wheel")
        return metrics_plan(Path(args.metrics), args.repo, stage, private=args.private, remotes=remotes, wheel=wheel)

    return _push(args, plan)


def results_main(args: argparse.Namespace) -> int:
    """Push the leaderboard entries (validated) and the responses they cite to a Hub dataset repo.

    vignette upload results --entries leaderboard/entries --repo ORG/vignette-results --dry-run
    """
    from vignette_bench.upload.results import results_plan

    def plan(api, consult: bool) -> list[Step]:
        return results_plan(
            Path(args.entries),
            args.repo,
            private=args.private,
            stage=Path(args.stage) if args.stage else None,
            remote=_listing(api, args.repo, "dataset", consult),
        )

    return _push(args, plan)


def card_main(args: argparse.Namespace) -> int:
    """Complete SOURCE/README.md with vignette_bench/cards/dataset_card_sections.md: pair counts, cautions,
    what is placeholder (local only; rerunning replaces the sections).

    vignette upload card --source sample_src
    """
    from vignette_bench.upload.card import complete_card

    print(f"wrote {complete_card(Path(args.source))}")
    return 0
