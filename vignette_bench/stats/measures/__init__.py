"""The four VIGNETTE measures, importable without `evaluate` (the report and leaderboard use them)."""
