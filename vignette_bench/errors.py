"""The one base of every failure this package knows how to explain.

`vignette` prints ``error: <message>`` and exits 2 for any `VignetteError` (``VIGNETTE_DEBUG=1``
shows the traceback too); anything else is a bug and keeps its traceback. Every error class the
package defines derives from it, so a new failure mode gets the clean exit by construction. It
stays a `ValueError` because callers and tests written against the loader catch that.
"""

from __future__ import annotations


class VignetteError(ValueError):
    """A failure the user can act on; the message names the file, row or key and what to do."""


# The optional packages a command, adapter or importer may need, by top-level import name, and the
# pyproject.toml extra that installs each (docs/adapters.md, "Extras"). The core install has none of them.
EXTRA_OF: dict[str, str] = {
    "torch": "hf",
    "transformers": "hf",
    "accelerate": "hf",
    "tokenizers": "hf",
    "safetensors": "hf",
    "outlines": "hf",
    "openai": "openai",
    "vllm": "vllm",
    "inspect_ai": "inspect",
    "matplotlib": "report",
    "jsonschema": "report",
    "cryptography": "report",
    "diffusers": "build",
    "webdataset": "build",
    "cv2": "build",
    "imagehash": "build",
}


def install_hint(extra: str) -> str:
    """The command that installs an extra."""
    return f'pip install "vignette-bench[{extra}]"'


class MissingExtra(VignetteError, ImportError):
    """An optional package is not installed; the message names the extra that installs it.

    Also an `ImportError`, so code written as ``except ImportError`` around an optional package keeps working."""

    def __init__(self, message: str, *, package: str | None = None, extra: str | None = None):
        super().__init__(message)
        self.package = package
        self.extra = extra

    @classmethod
    def for_module(cls, module: str, needed_by: str = "this command") -> MissingExtra:
        top = module.split(".")[0]
        extra = EXTRA_OF.get(top)
        hint = f"; install it with: {install_hint(extra)}" if extra else ""
        return cls(f"{needed_by} needs the `{top}` package{hint}", package=top, extra=extra)


def missing_extra(error: BaseException, needed_by: str = "this command") -> MissingExtra | None:
    """The `MissingExtra` for a `ModuleNotFoundError` of an optional package (one of `EXTRA_OF`), else None."""
    if isinstance(error, MissingExtra):
        return error
    if not isinstance(error, ModuleNotFoundError) or not error.name:
        return None
    if error.name.split(".")[0] not in EXTRA_OF:
        return None
    return MissingExtra.for_module(error.name, needed_by)


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
