"""Names a person reads: a model by its id and revision from the run record, never a machine path.

``llava-hf/llava-v1.6-mistral-7b-hf@0123abc`` for a Hub model, ``random (seed 0)`` for the reference
random responder, a local model folder by its base name, and a run folder by its base name when the
record says nothing. ``vignette report --label RUN=NAME`` overrides any of them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath, PureWindowsPath

from vignette_bench.formats.run_record import RunRecord

_HEX = re.compile(r"[0-9a-f]{12,64}")


def _is_path(model_id: str) -> bool:
    """A local folder rather than a Hub id (`owner/name`): absolute, relative with dots or ~, or deeper."""
    s = model_id.strip()
    return (
        s.startswith(("/", ".", "~", "\\"))
        or PureWindowsPath(s).drive != ""
        or s.count("/") > 1
        or "\\" in s
        or s.startswith("file:")
    )


def base_name(path: str) -> str:
    """The last part of a path, whichever separator it uses."""
    s = path.rstrip("/\\").removeprefix("file://")
    return PureWindowsPath(s).name if "\\" in s else PurePosixPath(s).name or s


def display_id(model_id: str) -> str:
    """A model id as shown: a Hub id as is, a local folder by its base name (never a machine path)."""
    return base_name(model_id) if _is_path(model_id) else model_id


def short_revision(revision: str | None) -> str:
    if not revision:
        return ""
    return revision[:7] if _HEX.fullmatch(revision) else revision


def model_label(record: RunRecord | None, run_dir: Path | str) -> str:
    """The name shown for a run's model (see the module docstring)."""
    if record is None:
        return base_name(str(run_dir))
    m = record.model
    seed = m.extra.get("seed")
    if m.adapter == "random" or (m.model_id or "").startswith("reference/random"):
        if seed is None:
            seed = record.settings.seed
        return f"random (seed {seed})"
    if record.simulated and (m.model_id or "").startswith("reference/"):
        return f"{m.model_id} (simulated)"
    model_id = m.model_id or (str(m.extra.get("id")) if m.extra.get("id") else "")
    if not model_id:
        spec = record.settings.model
        model_id = spec if spec and not _is_path(spec) else base_name(str(run_dir))
    if _is_path(model_id):
        return base_name(model_id)  # a local folder: its base name only (no machine path)
    rev = short_revision(m.pinned_revision)
    return f"{model_id}@{rev}" if rev and rev != "simulated" else model_id


def run_label(run_dir: Path | str) -> str:
    """A run folder as a person reads it: its base name (e.g. `identity_contrast`)."""
    return base_name(str(run_dir))


def parse_labels(items: list[str] | None) -> dict[str, str]:
    """`--label RUN=NAME` items -> {resolved run folder: name}; a bad item raises ValueError."""
    out: dict[str, str] = {}
    for item in items or []:
        run, sep, name = item.partition("=")
        if not sep or not run.strip() or not name.strip():
            raise ValueError(f"--label {item!r}: expected RUN=NAME (a run folder and the name to show)")
        out[str(Path(run.strip()).resolve())] = name.strip()
    return out


def label_for(record: RunRecord | None, run_dir: Path | str, labels: Mapping[str, str] | None = None) -> str:
    """`--label` when given for this run folder, else `model_label`."""
    if labels:
        key = str(Path(run_dir).resolve())
        if key in labels:
            return labels[key]
    return model_label(record, run_dir)


def scrub(text: str, paths: list[Path | str]) -> str:
    """Replace each given folder (absolute or as given) in ``text`` by its base name."""
    for p in sorted({str(x) for x in paths} | {str(Path(x).resolve()) for x in paths}, key=len, reverse=True):
        if p and p not in (".", "/"):
            text = text.replace(p, base_name(p))
    return text


def record_line(record: RunRecord | None, run_dir: Path | str) -> str:
    """What the run record says about the model, as a person reads it (a local path as its base name)."""
    if record is None:
        return f"{run_label(run_dir)}: no run record (model id, revision and settings unknown)"
    m = record.model
    model_id = m.model_id or ""
    shown = base_name(model_id) + " (a local folder)" if model_id and _is_path(model_id) else model_id or "–"
    parts = [f"model id `{shown}`", f"revision `{short_revision(m.pinned_revision) or '–'}`"]
    if m.adapter:
        parts.append(f"adapter `{m.adapter}`")
    parts.append(f"config `{record.settings.config}`, seed {record.settings.seed}")
    return f"{run_label(run_dir)}: " + ", ".join(parts)
