"""The offline demo behind `make demo` (grows stage by stage as the pipeline lands)."""

from __future__ import annotations

import argparse

from dataset_builder.taxonomy import load_taxonomy


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="demo_out", help="folder for everything the demo writes")
    parser.parse_args(argv)
    taxonomy = load_taxonomy()
    print(f"taxonomy: {len(taxonomy.identities)} identities in {len(taxonomy.dimensions)} dimensions, "
          f"{len(taxonomy.activities)} activities, {len(taxonomy.traits)} trait pairs, "
          f"{len(taxonomy.role_questions)} role questions")


if __name__ == "__main__":
    main()
