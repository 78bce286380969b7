"""Names on the board (model ids, entry ids, submitters): one spelling per name, and nothing invisible.

A name that looks like another is a way to take its row or its entry id (a zero-width space inside a real model
id slugs to the same entry id), and a bidi override (U+202E) makes a cell read backwards. So every name must be
in Unicode NFKC form and hold no control, format (zero-width, bidi) or separator-other-than-space character;
model and entry ids must also be ASCII, as Hub ids are, so a Cyrillic "а" cannot pass for a Latin "a".
Submitter names may be any script (people's names), NFKC-normalised at `create`.

`visible` is for text that is not a checked name (file names, reasons, hardware strings) on its way to the page
or the Markdown copy: every such character is shown as its code point instead of acting.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

# Unicode categories that render as nothing or act on the text around them: controls (Cc), formats (Cf: zero-width
# spaces and joiners, bidi marks, embeddings, overrides and isolates, the BOM), line/paragraph separators (Zl, Zp),
# surrogates, private use and unassigned code points.
_HIDDEN = ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn")
ENTRY_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,199}")  # what `create` writes: slug--hash--slug, lower-case ASCII


def hidden(ch: str) -> bool:
    return unicodedata.category(ch) in _HIDDEN or (ch.isspace() and ch != " ")


def _name(ch: str) -> str:
    return f"U+{ord(ch):04X} {unicodedata.name(ch, 'unnamed')}"


def problem(text: str, *, ascii_only: bool) -> str | None:
    """Why `text` is not an acceptable name, or None."""
    for i, ch in enumerate(text):
        if hidden(ch):
            return f"invisible or control character {_name(ch)} at position {i}: names are plain visible text"
    normal = unicodedata.normalize("NFKC", text)
    if normal != text:
        return f"not in Unicode NFKC form (it would read {normal!r}); write it that way"
    if ascii_only:
        for i, ch in enumerate(text):
            if not ch.isascii():
                return (
                    f"non-ASCII character {_name(ch)} at position {i}: model and entry ids are ASCII (as Hub ids "
                    "are), so a look-alike of another id cannot pass for it"
                )
    return None


def entry_problem(entry: dict[str, Any]) -> tuple[str, str] | None:
    """(field, reason) of the first bad name of an entry (as `Entry` parsed it), or None."""
    checks: list[tuple[str, Any, bool]] = [
        ("model.id", (entry.get("model") or {}).get("id"), True),
        ("entry_id", entry.get("entry_id"), True),
        ("submitted.by", (entry.get("submitted") or {}).get("by"), False),
    ]
    for field, value, ascii_only in checks:
        if not isinstance(value, str):
            continue  # the schema names a missing or mistyped field
        why = problem(value, ascii_only=ascii_only)
        if why:
            return field, why
    if isinstance(entry.get("entry_id"), str) and not ENTRY_ID.fullmatch(entry["entry_id"]):
        return "entry_id", "must be lower-case letters, digits and '-' (what `vignette leaderboard create` writes)"
    return None


def normal_submitter(by: str) -> str:
    """`--by` as recorded: NFKC-normalised (a full-width or composed spelling becomes the plain one)."""
    return unicodedata.normalize("NFKC", by)


def visible(value: Any) -> Any:
    """Text with every hidden character shown as ``<U+202E>`` instead of acting; other values unchanged."""
    if not isinstance(value, str):
        return value
    return "".join(f"<U+{ord(ch):04X}>" if hidden(ch) else ch for ch in value)


# Bare URLs, www. hosts and e-mail addresses, which GFM (GitHub, the Hub) turns into links without any markup.
_AUTOLINK = re.compile(r"(?i)(?:\b[a-z][a-z0-9+.-]*://|\bwww\.)[^\s<>]*|[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


def defang(text: str) -> str:
    """A bare URL, www. host or e-mail address as text no Markdown renderer links: ``https[:]//evil[.]com``."""
    return _AUTOLINK.sub(lambda m: m.group().replace("://", "[:]//").replace(".", "[.]").replace("@", "[@]"), text)
