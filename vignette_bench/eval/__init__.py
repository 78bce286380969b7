"""Put VIGNETTE's questions to a model and record every answer (see docs/FORMATS.md)."""
