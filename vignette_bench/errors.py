"""The one base of every failure this package knows how to explain.

`vignette` prints ``error: <message>`` and exits 2 for any `VignetteError` (``VIGNETTE_DEBUG=1``
shows the traceback too); anything else is a bug and keeps its traceback. Every error class the
package defines derives from it, so a new failure mode gets the clean exit by construction. It
stays a `ValueError` because callers and tests written against the loader catch that.
"""

from __future__ import annotations


class VignetteError(ValueError):
    """A failure the user can act on; the message names the file, row or key and what to do."""


def known_failure(error: BaseException) -> str | None:
    """The `error: …` message for a failure outside this package that a user can act on — a file or folder
    that cannot be read or written (OSError: missing, read-only, a folder where a file belongs), a network
    read that failed (aiohttp, fsspec timeouts), a tar that lies, an image bomb — or None for a bug.

    Only modules already imported are consulted, so this costs no import."""
    import sys

    if isinstance(error, OSError):
        where = error.filename if error.filename is not None else ""
        other = f" -> {error.filename2}" if getattr(error, "filename2", None) else ""
        if error.strerror and where:
            return f"{where}{other}: {error.strerror} ({type(error).__name__})"
        return f"{type(error).__name__}: {error or 'no message'}"
    kinds: list[type[BaseException]] = []
    aiohttp = sys.modules.get("aiohttp")
    if aiohttp is not None:
        kinds.append(aiohttp.ClientError)
    tarfile = sys.modules.get("tarfile")
    if tarfile is not None:
        kinds.append(tarfile.TarError)
    image = sys.modules.get("PIL.Image")
    if image is not None:
        kinds.append(image.DecompressionBombError)
    fsspec_exceptions = sys.modules.get("fsspec.exceptions")
    if fsspec_exceptions is not None:
        kinds.append(fsspec_exceptions.FSTimeoutError)
    if isinstance(error, tuple(kinds)):
        return f"{type(error).__name__}: {error or repr(error)}"
    return None
