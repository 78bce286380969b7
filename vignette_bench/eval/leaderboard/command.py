"""vignette leaderboard {create,validate,build,export}

create RUN_DIR --by NAME [--out leaderboard/entries] [--location URL]   make an entry from a finished run
validate ENTRY [ENTRY ...]                                             recompute every number; exit 1 on any mismatch
verify ENTRY --model SPEC [--n 50]                                     re-ask a random subset with the model
build [--entries leaderboard/entries] [--out leaderboard/site]         validate all, then the board (MD + HTML page)
export ENTRY --dataset-id ID [--out DIR]                               .eval_results/*.yaml for the model's Hub repo
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vignette_bench.eval.leaderboard import verify as verify_cmd
from vignette_bench.eval.leaderboard.board import build, collect, export
from vignette_bench.eval.leaderboard.entry import EntryError, create, validate, write_entry
from vignette_bench.eval.runs import RunError


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("create", help="make an entry from a RUN_DIR")
    c.add_argument("run_dir")
    c.add_argument("--by", required=True, help="who submits (Hub user or org)")
    c.add_argument("--out", default="leaderboard/entries")
    c.add_argument("--location", help="where the responses parquet will be published (hf://datasets/..., https://...)")
    v = sub.add_parser("validate", help="recompute an entry's numbers from its responses")
    v.add_argument("entries", nargs="+")
    r = sub.add_parser("verify", help="re-ask a random subset of an entry's questions with the named model")
    verify_cmd.add_arguments(r)
    b = sub.add_parser("build", help="validate every entry and render the board")
    b.add_argument("--entries", default="leaderboard/entries")
    b.add_argument("--out", default="leaderboard/site")
    b.add_argument("--strict", action="store_true", help="exit 1 when any entry is rejected (default: list it)")
    e = sub.add_parser("export", help="write the Hub model-repo eval-results file for an entry")
    e.add_argument("entry")
    e.add_argument("--dataset-id", required=True, help="the benchmark dataset's Hub id")
    e.add_argument("--source-url", help="link to the leaderboard or results repo")
    e.add_argument("--out", default=".")
    args = p.parse_args(argv)
    try:
        if args.cmd == "create":
            out = Path(args.out)
            probe = out / "_new.json"
            entry = create(args.run_dir, by=args.by, location=args.location, entry_path=probe)
            path = write_entry(entry, out / f"{entry['entry_id']}.json")
            print(f"wrote {path}")
        elif args.cmd == "validate":
            bad = 0
            for path in args.entries:
                try:
                    checked = validate(path)
                    why = "; ".join(checked.entry["protocol"]["differences"])
                    print(f"ok      {path} ({checked.protocol}{': ' + why if why else ''})")
                except EntryError as err:
                    bad += 1
                    print(f"REJECT  {path}: {err}", file=sys.stderr)
            return 1 if bad else 0
        elif args.cmd == "verify":
            return verify_cmd.main(args)
        elif args.cmd == "build":
            accepted, rejected = collect(Path(args.entries))
            for path, reason in rejected:
                print(f"REJECT  {path}: {reason}", file=sys.stderr)
            md, page = build(accepted, Path(args.out), rejected=rejected)
            print(f"{len(accepted)} entries ({len(rejected)} rejected) -> {md}, {page}")
            return 1 if rejected and args.strict else 0
        elif args.cmd == "export":
            checked = validate(args.entry)
            status = verify_cmd.load_verification(Path(args.entry), checked.entry)
            print(f"wrote {export(checked.entry, Path(args.out), args.dataset_id, args.source_url, status)}")
    except (EntryError, RunError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
