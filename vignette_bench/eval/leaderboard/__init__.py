"""The VIGNETTE leaderboard: entries that are recomputed from their responses (docs/leaderboard.md)."""
