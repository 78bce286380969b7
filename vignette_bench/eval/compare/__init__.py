"""`vignette compare`: two runs identity by identity, with cluster-robust intervals (docs/compare.md)."""
