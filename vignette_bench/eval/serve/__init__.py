"""An OpenAI-compatible chat server over any model adapter (`vignette serve`)."""
