"""vignette leaderboard {create,validate,verify,build,export}

create RUN --by NAME [--out leaderboard/entries] [--location URL]      make an entry (+ its responses) from a run
validate ENTRY [ENTRY ...]                                             recompute every number; exit 1 on any mismatch
verify ENTRY --model SPEC [--limit 50]                                 re-ask a random subset with the model
build [--entries leaderboard/entries] [--out leaderboard/site]         validate all, then the board (MD + HTML page)
export ENTRY --repo ORG/vignette [--out DIR]                           .eval_results/*.yaml for the model's Hub repo

Each is its own command: `vignette_bench.cli`'s table names its parser (in the light
`vignette_bench.eval.leaderboard.arguments`) and its ``<name>_main`` here; ``verify`` lives in
`vignette_bench.eval.leaderboard.verify`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vignette_bench.eval.leaderboard import verify as verify_cmd
from vignette_bench.eval.leaderboard.board import build, collect, export
from vignette_bench.eval.leaderboard.contribute import create_in_board
from vignette_bench.eval.leaderboard.entry import EntryError, validate
from vignette_bench.eval.leaderboard.official import from_args as official_from
from vignette_bench.eval.runs import RunError


def create_main(args: argparse.Namespace) -> int:
    """vignette leaderboard create RUN --by NAME: make an entry from a finished run."""
    try:  # without --location the responses are copied beside the entry (contribute.py)
        path = create_in_board(args.run, by=args.by, entries=Path(args.out), location=args.location)
    except (EntryError, RunError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2  # no entry made: an error (only validate, build, verify and check-pr judge entries: 1)
    print(f"wrote {path}")
    return 0


def validate_main(args: argparse.Namespace) -> int:
    """vignette leaderboard validate ENTRY [ENTRY ...]: recompute every number; exit 1 on any mismatch."""
    bad = 0
    try:
        for path in args.entries:
            try:
                checked = validate(path, official_from(args))
                why = "; ".join(checked.custom_because or checked.entry["protocol"]["differences"])
                print(f"ok      {path} ({checked.protocol}{': ' + why if why else ''})")
            except EntryError as err:
                bad += 1
                print(f"REJECT  {path}: {err}", file=sys.stderr)
    except RunError as err:  # cannot run (1 is an entry rejected)
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 1 if bad else 0


def build_main(args: argparse.Namespace) -> int:
    """vignette leaderboard build: validate every entry and render the board (Markdown + one HTML page)."""
    if not Path(args.entries).is_dir():
        print(f"error: --entries {args.entries}: no such folder (the board's entries/)", file=sys.stderr)
        return 2
    try:
        accepted, rejected = collect(Path(args.entries), args.keys, official_from(args))
        for path, reason in rejected:
            print(f"REJECT  {path}: {reason}", file=sys.stderr)
        for a in accepted:
            if not a.verification.verified:
                print(f"self-reported  {a.path}: {a.verification.reason}", file=sys.stderr)
        md, page = build(accepted, Path(args.out), rejected=rejected)
    except (EntryError, RunError) as err:  # cannot build (1 is an entry rejected)
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{len(accepted)} entries ({len(rejected)} rejected) -> {md}, {page}")
    return 1 if rejected else 0  # a rejected entry fails the build, with or without --strict


def export_main(args: argparse.Namespace) -> int:
    """vignette leaderboard export ENTRY --repo ID: .eval_results/*.yaml for the model's Hub repo."""
    try:
        checked = validate(args.entry)
        status = verify_cmd.verification_status(Path(args.entry), checked.entry)
        written = export(checked.entry, Path(args.out), args.repo, args.link, status.record, status.verified)
        print(f"wrote {written}")
    except (EntryError, RunError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2  # the CLI's code for an error it can explain (vignette_bench/cli.py)
    return 0
