"""The one base of every failure this package knows how to explain.

`vignette` prints ``error: <message>`` and exits 2 for any `VignetteError` (``VIGNETTE_DEBUG=1``
shows the traceback too); anything else is a bug and keeps its traceback. Every error class the
package defines derives from it, so a new failure mode gets the clean exit by construction. It
stays a `ValueError` because callers and tests written against the loader catch that.
"""

from __future__ import annotations


class VignetteError(ValueError):
    """A failure the user can act on; the message names the file, row or key and what to do."""
