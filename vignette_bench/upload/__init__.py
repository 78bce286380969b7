"""Publish to the Hugging Face Hub: dataset source, metric Spaces, results (see docs/upload.md)."""
