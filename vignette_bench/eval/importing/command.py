"""`vignette import --format FORMAT --source PATH --out RUN`: external answers as a run folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from vignette_bench.errors import VignetteError
from vignette_bench.eval.importing.arguments import import_add_arguments as add_arguments
from vignette_bench.eval.importing.core import Identities, ImportProblems, Problems, sha256, write_run
from vignette_bench.formats.run_record import DatasetProvenance, ImportedFile, RunSettings
from vignette_bench.taxonomy import load_taxonomy

__all__ = ["add_arguments", "main"]


class ImportError_(VignetteError):
    """The command's input or output cannot be used (missing source, existing output)."""


def _files(source: Path, suffixes: tuple[str, ...]) -> list[Path]:
    if source.is_file():
        return [source]
    if source.is_dir():
        return sorted(p for p in source.rglob("*") if p.is_file() and p.suffix.lower() in suffixes)
    raise ImportError_(f"--source {source}: no such file or folder")


def run_import(fmt: str, source: Path, out: Path, model_id: str = "unknown") -> Path:
    """Import `source` (a file or folder) in format `fmt` into the new run folder `out`."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ImportError_(f"--out {out}: exists and is not an empty folder; name a new run folder")
    taxonomy = load_taxonomy()
    identities = Identities(taxonomy)
    problems = Problems()
    rows: list[dict] = []
    where: list[str] = []
    files: list[ImportedFile] = []
    not_recovered: tuple[str, ...] = ()
    consequences: tuple[str, ...] = ()
    settings: RunSettings | None = None  # the run's own settings and source, where the format records them
    dataset: DatasetProvenance | None = None
    if fmt == "vignette-csv":
        from vignette_bench.eval.importing import vignette_csv as reader

        paths = _files(source, (".csv",))
        not_recovered = reader.NOT_RECOVERED
        for path in paths:
            shown = str(path.relative_to(source)) if source.is_dir() else str(path)
            got, at = reader.read_file(path, shown, taxonomy, identities, model_id, problems)
            rows += got
            where += at
            files.append(ImportedFile(path=shown, sha256=sha256(path), rows=len(got)))
    elif fmt == "table":
        from vignette_bench.eval.importing import table

        paths = _files(source, table.SUFFIXES)
        if len(paths) != 1:
            raise ImportError_(f"--source {source}: the table format reads one file, found {len(paths)}")
        shown = str(paths[0])
        rows, where, not_recovered, consequences = table.read_file(
            paths[0], shown, taxonomy, identities, model_id, problems
        )
        files.append(ImportedFile(path=shown, sha256=sha256(paths[0]), rows=len(rows)))
    elif fmt == "inspect":
        try:
            from vignette_bench.eval.importing import inspect_log
        except ModuleNotFoundError as e:  # the inspect extra is optional
            raise ImportError_(
                f'--format inspect needs inspect_ai: pip install "vignette-bench[inspect]" ({e})'
            ) from None
        paths = [p for p in _files(source, inspect_log.SUFFIXES) if p.name not in inspect_log.NOT_LOGS]
        not_recovered = inspect_log.NOT_RECOVERED
        tasks: list[dict] = []
        for path in paths:
            shown = str(path.relative_to(source)) if source.is_dir() else str(path)
            got, at, model_id, task = inspect_log.read_file(
                path, shown, None if model_id == "unknown" else model_id, problems
            )
            rows += got
            where += at
            files.append(ImportedFile(path=shown, sha256=sha256(path), rows=len(got)))
            tasks += [task] if task is not None else []
        if tasks and not problems.items:
            settings, dataset = inspect_log.provenance(tasks, model_id, problems)
    else:
        raise ImportError_(f"--format {fmt!r}: unknown")
    if not paths:
        raise ImportError_(f"--source {source}: no files of format {fmt} found")
    if problems.items:
        raise ImportProblems(problems.items)
    return write_run(
        out,
        rows,
        where,
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
    folder = run_import(args.format, Path(args.source), Path(args.out), args.model or "unknown")
    import pyarrow.parquet as pq

    n = pq.ParquetFile(folder / "responses.parquet").metadata.num_rows
    print(f"imported {n} answers ({args.format}) into {folder}: responses.parquet + run.json")
    print(f"next: vignette report {folder} --out report")
    return 0
