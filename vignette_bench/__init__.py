"""The VIGNETTE benchmark tools: taxonomy, dataset builder, evaluation, metrics, reports, upload.

The loading module is the top-level ``vignette`` (``from vignette import load_dataset``); the
command line is ``vignette`` (``vignette --help``). docs/layout.md maps the parts.
"""

from importlib import metadata

try:
    __version__ = metadata.version("vignette-bench")
except metadata.PackageNotFoundError:  # a source tree that was not installed
    __version__ = "0+unknown"
