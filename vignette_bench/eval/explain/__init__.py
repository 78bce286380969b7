"""Attention of an answer over the pair image, and the three-panel pictures (`vignette explain`)."""
