"""Maintainer keys and signed verifications: a "verified" mark nobody can write by hand.

A verification record (`formats.verification.Verification`) counts only when it carries an Ed25519
signature, over every other field of the record, by a key that the board's ``maintainers.json`` lists
(the file sits beside ``entries/`` and ``verifications/``). The digest of the entry, the model spec
and the model id/revision it reported, the hardware string and the result (passed, counts, agreement)
are all fields of the record, so a hand-written record (no or a forged signature), one copied from
another entry (another digest), one edited after signing (the signature no longer matches), one
signed by an unlisted key, and a failed one all show "self-reported"; `check` says which.

Keys: `generate_key` writes a private key (PKCS#8 PEM, mode 0600) and returns its public half as the
``{"name", "public_key"}`` line for ``maintainers.json``. The private key is never committed.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vignette_bench.errors import VignetteError
from vignette_bench.formats.base import FormatError
from vignette_bench.formats.verification import Verification, read_maintainer_keys

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

KEYS_FILE = "maintainers.json"
DOMAIN = b"vignette-verification/3\n"  # a signature made for anything else never verifies a record


class SigningError(VignetteError):
    """A maintainer key cannot be read or written."""


def _crypto() -> Any:
    try:
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:  # pragma: no cover - the report extra carries it
        raise SigningError(
            "signing verifications needs the `cryptography` package: pip install 'vignette-bench[report]'"
        ) from None
    return ed25519


def raw_public(public: Ed25519PublicKey) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(public: Ed25519PublicKey | bytes) -> str:
    """sha256 of the raw 32-byte public key, first 16 hex digits: names the key in a record."""
    raw = public if isinstance(public, bytes) else raw_public(public)
    return hashlib.sha256(raw).hexdigest()[:16]


def public_key_text(public: Ed25519PublicKey) -> str:
    return base64.b64encode(raw_public(public)).decode()


def generate_key(out: Path) -> Ed25519PrivateKey:
    """A new private key written to ``out`` (PKCS#8 PEM, readable by its owner only); refuses to overwrite."""
    from cryptography.hazmat.primitives import serialization

    key = _crypto().Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise SigningError(f"{out}: exists; a key is never overwritten (choose another --out)") from None
    except OSError as e:
        raise SigningError(f"{out}: cannot write the key ({e.strerror or type(e).__name__})") from None
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
    return key


def load_private_key(path: Path) -> Ed25519PrivateKey:
    """The maintainer's private key (PEM or OpenSSH, unencrypted, or encrypted with $VIGNETTE_KEY_PASSPHRASE)."""
    from cryptography.hazmat.primitives import serialization

    ed25519 = _crypto()
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise SigningError(f"{path}: cannot read the key ({e.strerror or type(e).__name__})") from None
    passphrase = os.environ.get("VIGNETTE_KEY_PASSPHRASE")
    key: Any
    try:
        if data.lstrip().startswith(b"-----BEGIN OPENSSH"):
            key = serialization.load_ssh_private_key(data, passphrase.encode() if passphrase else None)
        else:
            key = serialization.load_pem_private_key(data, passphrase.encode() if passphrase else None)
    except (ValueError, TypeError) as e:
        raise SigningError(f"{path}: not a readable private key ({e})") from None
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise SigningError(
            f"{path}: a {type(key).__name__}, not an Ed25519 key (make one: vignette leaderboard keygen)"
        )
    return key


def payload(record: Verification) -> bytes:
    """What is signed: every field but the signature, as canonical JSON, after a domain tag."""
    body = record.to_json()
    body.pop("signature", None)
    return DOMAIN + json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def sign(record: Verification, key: Ed25519PrivateKey) -> Verification:
    signed = record.model_copy(update={"signed_by": key_id(key.public_key()), "signature": None})
    signature = base64.b64encode(key.sign(payload(signed))).decode()
    return signed.model_copy(update={"signature": signature})


@dataclass(frozen=True)
class Keys:
    """The board's maintainer keys by id; `problem` says why none could be read (no file, a bad file)."""

    by_id: dict[str, tuple[str, bytes]]
    problem: str | None = None


def keys_path(board: Path) -> Path:
    return Path(board) / KEYS_FILE


def load_keys(board: Path) -> Keys:
    """``maintainers.json`` of the board folder (the folder holding entries/ and verifications/)."""
    from vignette_bench.eval.leaderboard.boardfiles import KEYS_MAX_BYTES, problem

    path = keys_path(board)
    if not path.is_file() and not path.is_symlink():
        return Keys({}, f"no {KEYS_FILE} beside the entries: no maintainer key is listed")
    refused = problem(path, KEYS_MAX_BYTES)  # a link out of the tree is never followed: the tree's own file only
    if refused:
        return Keys({}, f"{KEYS_FILE}: {refused}")
    return load_keys_file(path)


def load_keys_file(path: Path) -> Keys:
    """A maintainers.json anywhere (e.g. the base branch's, for CI on a pull request)."""
    path = Path(path)
    if not path.is_file():
        raise SigningError(f"{path}: no such keys file")
    from vignette_bench.eval.leaderboard.boardfiles import KEYS_MAX_BYTES

    try:
        listed = read_maintainer_keys(path, KEYS_MAX_BYTES)
    except OSError as e:
        return Keys({}, f"{KEYS_FILE} cannot be read ({e.strerror or type(e).__name__})")
    except FormatError as e:  # never a key or value of the file in the log: it may be anyone's
        what = "not valid JSON" if e.reason.startswith("not valid JSON") else "does not match the format"
        return Keys({}, f"{KEYS_FILE} unreadable ({what})")
    out: dict[str, tuple[str, bytes]] = {}
    for k in listed.keys:
        raw = base64.b64decode(k.public_key)
        out[key_id(raw)] = (k.name, raw)
    return Keys(out)


def check(record: Verification, keys: Keys) -> str | None:
    """None when the record carries a valid signature by a listed key; else why not, in words."""
    if record.signature is None or record.signed_by is None:
        return "the verification is not signed (written by hand, or by an older vignette)"
    if keys.problem:
        return keys.problem
    listed = keys.by_id.get(record.signed_by)
    if listed is None:
        return f"signed by key {record.signed_by}, which {KEYS_FILE} does not list"
    try:
        from cryptography.exceptions import InvalidSignature
    except ImportError:
        return "signatures cannot be checked here: install `cryptography` (pip install 'vignette-bench[report]')"
    try:
        signature = base64.b64decode(record.signature, validate=True)
        _crypto().Ed25519PublicKey.from_public_bytes(listed[1]).verify(signature, payload(record))
    except (InvalidSignature, ValueError):
        return f"the signature by {listed[0]} ({record.signed_by}) does not match the record: edited after signing"
    return None
