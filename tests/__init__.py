"""Tests mirror the package layout: tests/<part>/ tests vignette_bench/<part>/."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
