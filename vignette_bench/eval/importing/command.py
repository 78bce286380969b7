"""`vignette import --format vignette-csv --source PATH --out RUN`: external answers as a run folder (FORMAT: docs/import.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from vignette_bench.errors import VignetteError
from vignette_bench.eval.importing.arguments import DEFAULT_MAX_MB
from vignette_bench.eval.importing.core import (
    Answers,
    Identities,
    ImportProblems,
    Problems,
    detected,
    remove_stale_temporaries,
    sha256,
    text_problem,
    write_run,
)
from vignette_bench.formats.run_record import DatasetProvenance, ImportedFile, RunSettings
from vignette_bench.taxonomy import load_taxonomy

__all__ = ["main"]

MAX_IMPORT_BYTES = DEFAULT_MAX_MB * 1024**2
MEMORY_PER_SOURCE_BYTE = 8  # peak RSS per source byte, measured by benchmarks/import_memory.py (BENCHMARKS.md)


class ImportError_(VignetteError):
    """The command's input or output cannot be used (missing source, existing output)."""


def _files(source: Path, suffixes: tuple[str, ...]) -> list[Path]:
    if source.is_file():
        return [source]
    if source.is_dir():
        return sorted(p for p in source.rglob("*") if p.is_file() and p.suffix.lower() in suffixes)
    raise ImportError_(f"--source {source}: no such file or folder")


def _empty(path: Path, shown: str, problems: Problems) -> bool:
    """An empty file is said to be empty (not "lacks columns" or "no answer rows")."""
    if path.stat().st_size == 0:
        problems.add(shown, None, None, "the file is empty (0 bytes)")
        return True
    return False


def _check_size(paths: list[Path], source: Path, max_bytes: int) -> None:
    """Every row is held in memory until the whole import checks out (nothing is written on error), at
    about MEMORY_PER_SOURCE_BYTE bytes per source byte: a source over the cap is refused before reading."""
    total = sum(p.stat().st_size for p in paths)
    if total > max_bytes:
        need = total * MEMORY_PER_SOURCE_BYTE / 1024**3
        raise ImportError_(
            f"--source {source}: {total / 1024**2:,.0f} MiB of answers is over the import limit of "
            f"{max_bytes / 1024**2:,.0f} MiB (an import holds its rows in memory: about {need:,.1f} GB for this "
            "source); split it into smaller imports, or pass --max-mb if this machine has that memory"
        )


def run_import(
    fmt: str,
    source: Path,
    out: Path,
    model_id: str = "unknown",
    encoding: str = "utf-8",
    max_bytes: int = MAX_IMPORT_BYTES,
) -> Path:
    """Import `source` (a file or folder) in format `fmt` into the new run folder `out`."""
    import codecs

    try:
        codecs.lookup(encoding)
    except LookupError:
        raise ImportError_(f"--encoding {encoding!r}: unknown (e.g. utf-8, cp1252, latin-1, utf-16)") from None
    remove_stale_temporaries(out)  # an earlier import killed before its rename
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ImportError_(f"--out {out}: exists and is not an empty folder; name a new run folder")
    taxonomy = load_taxonomy()
    identities = Identities(taxonomy)
    problems = Problems()
    answers = Answers(str(source), problems)
    files: list[ImportedFile] = []
    not_recovered: tuple[str, ...] = ()
    consequences: tuple[str, ...] = ()
    settings: RunSettings | None = None  # the run's own settings and source, where the format records them
    dataset: DatasetProvenance | None = None
    if fmt == "vignette-csv":
        from vignette_bench.eval.importing import vignette_csv as reader

        paths = _files(source, (".csv",))
        _check_size(paths, source, max_bytes)
        not_recovered = reader.NOT_RECOVERED
        for path in paths:
            shown = str(path.relative_to(source)) if source.is_dir() else str(path)
            enc = detected(path, encoding)
            why = text_problem(path, enc)
            if _empty(path, shown, problems):
                continue
            if why is not None:
                problems.add(shown, None, None, why)
                continue
            got = reader.read_file(path, shown, taxonomy, identities, model_id, answers, enc)
            files.append(ImportedFile(path=shown, sha256=sha256(path), rows=got))
    elif fmt == "table":
        from vignette_bench.eval.importing import table

        paths = _files(source, table.SUFFIXES)
        if len(paths) != 1:
            raise ImportError_(f"--source {source}: the table format reads one file, found {len(paths)}")
        _check_size(paths, source, max_bytes)
        shown = str(paths[0])
        text = paths[0].suffix.lower() != ".parquet"
        enc = detected(paths[0], encoding) if text else encoding
        why = text_problem(paths[0], enc) if text else None
        if _empty(paths[0], shown, problems):
            raise ImportProblems(problems.items)
        if why is not None:
            raise ImportProblems([f"{shown}: {why}"])
        got, not_recovered, consequences = table.read_file(
            paths[0], shown, taxonomy, identities, model_id, answers, enc
        )
        files.append(ImportedFile(path=shown, sha256=sha256(paths[0]), rows=got))
    elif fmt == "inspect":
        try:
            from vignette_bench.eval.importing import inspect_log
        except ModuleNotFoundError as e:  # the inspect extra is optional
            raise ImportError_(
                f'--format inspect needs inspect_ai: pip install "vignette-bench[inspect]" ({e})'
            ) from None
        paths = [p for p in _files(source, inspect_log.SUFFIXES) if p.name not in inspect_log.NOT_LOGS]
        _check_size(paths, source, max_bytes)
        not_recovered = inspect_log.NOT_RECOVERED
        tasks: list[dict] = []
        for path in paths:
            shown = str(path.relative_to(source)) if source.is_dir() else str(path)
            got, model_id, task = inspect_log.read_file(
                path, shown, None if model_id == "unknown" else model_id, answers
            )
            files.append(ImportedFile(path=shown, sha256=sha256(path), rows=got))
            tasks += [task] if task is not None else []
        if tasks and not problems.items:
            settings, dataset = inspect_log.provenance(tasks, model_id, problems)
    elif fmt == "lmms-eval":
        from vignette_bench.eval.importing import lmms_eval_log

        paths = [
            p for p in _files(source, lmms_eval_log.SUFFIXES) if source.is_file() or lmms_eval_log.is_samples_file(p)
        ]
        _check_size(paths, source, max_bytes)
        not_recovered = lmms_eval_log.NOT_RECOVERED
        runs: set[tuple[str, str]] = set()
        for path in paths:
            shown = str(path.relative_to(source)) if source.is_dir() else str(path)
            got, model_id, named = lmms_eval_log.read_file(
                path, shown, None if model_id == "unknown" else model_id, answers
            )
            runs |= named
            files.append(ImportedFile(path=shown, sha256=sha256(path), rows=got))
        if not problems.items:
            settings, dataset = lmms_eval_log.provenance(runs, model_id, problems)
    else:
        raise ImportError_(f"--format {fmt!r}: unknown")
    if not paths:
        raise ImportError_(f"--source {source}: no files of format {fmt} found")
    if problems.items:
        raise ImportProblems(problems.items)
    return write_run(
        out,
        answers,
        fmt=fmt,
        files=files,
        source=str(source),
        model_id=model_id,
        not_recovered=not_recovered,
        consequences=consequences,
        taxonomy=taxonomy,
        settings=settings,
        dataset=dataset,
    )


def main(args: argparse.Namespace) -> int:
    folder = run_import(
        args.format,
        Path(args.source),
        Path(args.out),
        args.model or "unknown",
        encoding=args.encoding,
        max_bytes=int(args.max_mb * 1024**2),
    )
    import pyarrow.parquet as pq

    n = pq.ParquetFile(folder / "responses.parquet").metadata.num_rows
    print(f"imported {n} answers ({args.format}) into {folder}: responses.parquet + run.json")
    print(f"next: vignette report {folder} --out report")
    return 0
