"""Copy the shared core block from selection_frequency.py into the other three metric modules.

Each module must stay one self-contained file (evaluate copies it out alone), so the counting
and statistics core is repeated verbatim; edit it in selection_frequency.py and run this.
tests/test_metrics_core.py fails when the copies drift.
"""

from __future__ import annotations

import sys
from pathlib import Path

BEGIN = "# ---- BEGIN SHARED CORE"
END = "# ---- END SHARED CORE ----"
HERE = Path(__file__).resolve().parent
SOURCE = HERE / "selection_frequency" / "selection_frequency.py"
TARGETS = [HERE / name / f"{name}.py" for name in ("log_odds", "pair_comp", "polarity")]


def shared_block(text: str, path: Path) -> str:
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < 0:
        raise ValueError(f"{path}: shared core markers not found")
    return text[start : end + len(END)]


def main() -> int:
    block = shared_block(SOURCE.read_text(), SOURCE)
    for path in TARGETS:
        text = path.read_text()
        old = shared_block(text, path)
        if old != block:
            path.write_text(text.replace(old, block))
            print(f"updated {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
