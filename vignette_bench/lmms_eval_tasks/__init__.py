"""VIGNETTE's tasks for lmms-eval: pass this folder as `--include_path` (docs/lmms_eval.md; `utils.py` says how)."""

from pathlib import Path

INCLUDE_PATH = Path(__file__).parent  # the folder lmms-eval reads the task YAMLs from
