"""``vignette build render``: one image per planned key with a diffusers text-to-image pipeline.

* Any pipeline by Hub id or local path (default FLUX.1-dev, 20 steps); the seed of each render
  is derived from its key (``records.stable_seed``) and drawn on a CPU generator, so the initial
  noise is the same on every machine.
* Work is split by the launcher's environment (``RANK``/``WORLD_SIZE``, set by ``torchrun`` and
  ``accelerate launch``) and, for job arrays, ``--shard i/N``; the two compose (i/N first).
* Resumable: a render whose image decodes at the recorded size and whose JSON record parses is
  never redone. Image then record are each written to a temp file and renamed, so a killed run
  leaves either a finished render or nothing usable (the record is the commit mark).
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import io
import os
import platform
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from PIL import Image
from tqdm.auto import tqdm

from vignette_bench import cli_options as opt
from vignette_bench.dataset_builder.arguments import DEFAULT_MODEL
from vignette_bench.dataset_builder.arguments import render_add_arguments as add_arguments  # noqa: F401 (the parser lives in a light module)
from vignette_bench.dataset_builder.records import RenderSpec, plan_renders
from vignette_bench.formats.render_record import RecordError, RenderRecord, read_render_record
from vignette_bench.taxonomy import load_taxonomy

VERSIONED_PACKAGES = ("torch", "diffusers", "transformers", "accelerate", "pillow")


@dataclass(frozen=True)
class RenderSettings:
    model: str = DEFAULT_MODEL
    revision: str | None = None
    steps: int = 20
    guidance: float = 3.5
    width: int = 1024
    height: int = 1024
    dtype: str = "auto"  # bfloat16 on GPU, float32 on CPU
    device: str = "auto"
    batch_size: int = 1
    max_sequence_length: int | None = None  # pipeline default when None


@dataclass(frozen=True)
class Share:
    """Which part of the work this process does: ``specs[job::jobs][rank::world]``."""

    job: int = 0
    jobs: int = 1
    rank: int = 0
    world: int = 1

    def take(self, specs: Sequence[RenderSpec]) -> list[RenderSpec]:
        return list(specs[self.job :: self.jobs][self.rank :: self.world])

    @classmethod
    def from_env(cls, shard: str | None = None, env: dict[str, str] | None = None) -> Share:
        env = dict(os.environ if env is None else env)
        job, jobs = 0, 1
        if shard:
            try:
                a, b = shard.split("/")
                job, jobs = int(a), int(b)
            except ValueError:
                raise ValueError(f"--shard {shard!r}: expected i/N, e.g. 0/4") from None
        rank, world = int(env.get("RANK", 0)), int(env.get("WORLD_SIZE", 1))
        if not (0 <= job < jobs and 0 <= rank < world):
            raise ValueError(f"bad split: shard {job}/{jobs}, RANK {rank} of WORLD_SIZE {world}")
        return cls(job, jobs, rank, world)


@dataclass(frozen=True)
class RenderReport:
    assigned: int
    already_done: int
    rendered: int


@lru_cache(maxsize=1)
def _versions() -> tuple[tuple[str, str], ...]:
    out = [("python", platform.python_version())]
    for name in VERSIONED_PACKAGES:
        try:
            out.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            out.append((name, ""))
    return tuple(out)


def library_versions() -> dict[str, str]:
    """Versions of the libraries that shape the pixels (read from metadata; nothing imported)."""
    return dict(_versions())


def model_revision(model: str, revision: str | None) -> str:
    """The commit a Hub model resolves to, or a fingerprint of a local folder's config files.

    A local folder has no commit; hashing its JSON configs and weight file sizes tells two
    different local models apart without reading gigabytes of weights.
    """
    path = Path(model)
    if path.is_dir():
        h = hashlib.sha256()
        for p in sorted(path.rglob("*")):
            if p.is_file() and p.suffix in (".json", ".txt", ".model"):
                h.update(str(p.relative_to(path)).encode() + b"\0" + p.read_bytes())
            elif p.is_file():
                h.update(str(p.relative_to(path)).encode() + b"\0" + str(p.stat().st_size).encode())
        return f"local-sha256:{h.hexdigest()}"
    from huggingface_hub import snapshot_download

    # The snapshot folder is named by the commit; fetching only model_index.json resolves it
    # online, and offline (HF_HUB_OFFLINE=1) it answers from the local cache.
    return Path(snapshot_download(model, revision=revision, allow_patterns=["model_index.json"])).name


def finished_record(out: Path, key: str) -> RenderRecord | None:
    """The record of a finished render (it parses, and its image decodes at the recorded size), else None."""
    try:
        record = read_render_record(out / f"{key}.json")
        with Image.open(out / f"{key}.png") as im:
            im.load()
            ok = im.size == (record.width, record.height) and record.key == key
        return record if ok else None
    except (OSError, RecordError, SyntaxError):
        return None


def _write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _resolve(settings: RenderSettings) -> tuple[str, Any]:
    import torch

    device = settings.device
    if device == "auto":
        device = f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}" if torch.cuda.is_available() else "cpu"
    dtype = settings.dtype
    if dtype == "auto":
        dtype = "bfloat16" if device.startswith("cuda") else "float32"
    return device, getattr(torch, dtype)


def load_pipeline(settings: RenderSettings) -> Any:
    from diffusers import DiffusionPipeline

    device, dtype = _resolve(settings)
    pipe = DiffusionPipeline.from_pretrained(settings.model, revision=settings.revision, dtype=dtype)
    pipe = pipe.to(device)
    pipe.set_progress_bar_config(disable=True)
    return pipe


class Renderer:
    """A loaded pipeline plus the settings every record it writes will carry."""

    def __init__(self, settings: RenderSettings, pipe: Any | None = None):
        self.settings = settings
        self.pipe = pipe if pipe is not None else load_pipeline(settings)
        self.device, dtype = _resolve(settings)
        self.dtype = str(dtype).removeprefix("torch.")
        self.revision = model_revision(settings.model, settings.revision)
        self.versions = library_versions()
        self._params = set(inspect.signature(self.pipe.__call__).parameters)

    def record(self, spec: RenderSpec) -> RenderRecord:
        s = self.settings
        return RenderRecord.from_spec(
            spec,
            model_id=s.model,
            model_revision=self.revision,
            scheduler=type(self.pipe.scheduler).__name__,
            steps=s.steps,
            guidance=float(s.guidance),
            width=s.width,
            height=s.height,
            dtype=self.dtype,
            max_sequence_length=s.max_sequence_length or 0,
            versions=self.versions,
            placeholder=False,
        )

    def images(self, specs: Sequence[RenderSpec]) -> list[Image.Image]:
        import torch

        s = self.settings
        kwargs: dict[str, Any] = {
            "prompt": [x.prompt for x in specs],
            "height": s.height,
            "width": s.width,
            "num_inference_steps": s.steps,
            "guidance_scale": s.guidance,
            # One CPU generator per image: its noise depends on its own seed only, on any device.
            "generator": [torch.Generator("cpu").manual_seed(x.seed) for x in specs],
            "output_type": "pil",
        }
        if s.max_sequence_length is not None:
            kwargs["max_sequence_length"] = s.max_sequence_length
        with torch.inference_mode():
            return list(self.pipe(**{k: v for k, v in kwargs.items() if k in self._params}).images)

    def render(self, specs: Sequence[RenderSpec], out: Path, progress: bool = True, desc: str = "render") -> int:
        """Render ``specs`` into ``out`` (no resume check here: the caller chose them)."""
        out.mkdir(parents=True, exist_ok=True)
        bs = max(1, self.settings.batch_size)
        with tqdm(total=len(specs), desc=desc, unit="img", disable=not progress) as bar:
            for i in range(0, len(specs), bs):
                batch = specs[i : i + bs]
                for spec, image in zip(batch, self.images(batch)):
                    buf = io.BytesIO()
                    image.save(buf, format="PNG")
                    # The record goes first and comes back last: a kill in between leaves an image with no
                    # record, which counts as unfinished and is redone, never an image of one seed under the
                    # record of another (a re-render after `check` replaces both).
                    (out / f"{spec.key}.json").unlink(missing_ok=True)
                    _write_atomically(out / f"{spec.key}.png", buf.getvalue())
                    _write_atomically(out / f"{spec.key}.json", self.record(spec).text().encode())
                    bar.update()
        return len(specs)


def clean_temp_files(out: Path, keys: Sequence[str]) -> None:
    """Remove temp files a killed run left for ``keys`` only: other processes' shares are theirs to clean."""
    mine = set(keys)
    for tmp in out.glob(".*.tmp-*"):
        if tmp.name[1:].split(".", 1)[0] in mine:
            tmp.unlink(missing_ok=True)


def render_all(
    specs: Sequence[RenderSpec],
    out: Path,
    settings: RenderSettings,
    share: Share = Share(),
    pipe: Any | None = None,
    progress: bool = True,
) -> RenderReport:
    """Render this process's share of ``specs`` into ``out``, skipping finished renders."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    mine = share.take(specs)
    clean_temp_files(out, [s.key for s in mine])
    done = {s.key: finished_record(out, s.key) for s in mine}
    stale = [s.key for s in mine if done[s.key] is not None and done[s.key].prompt != s.prompt]  # type: ignore[union-attr]
    if stale:
        # The taxonomy changed the prompt: the old image does not show what the key now means.
        print(
            f"warning: {len(stale)} render(s) have an outdated prompt (e.g. {stale[0]}); re-rendering them",
            file=sys.stderr,
        )
        done.update({k: None for k in stale})
    pending = [s for s in mine if done[s.key] is None]
    other = [
        r
        for r in done.values()
        if r is not None
        and (r.model_id, r.steps, r.guidance, r.width, r.height)
        != (settings.model, settings.steps, settings.guidance, settings.width, settings.height)
    ]
    if other:
        # Finished renders are kept, never redone; say so when they were made differently.
        print(
            f"warning: {len(other)} finished render(s) in {out} were made with other settings "
            f"(e.g. {other[0].key}: {other[0].model_id}, {other[0].steps} steps, {other[0].width}x{other[0].height}); "
            "they are kept. Use a new --out to render everything with the new settings.",
            file=sys.stderr,
        )
    if pending:
        renderer = Renderer(settings, pipe)
        renderer.render(pending, out, progress, desc=f"render {share.job}/{share.jobs} rank {share.rank}/{share.world}")
    return RenderReport(len(mine), len(mine) - len(pending), len(pending))


def rerender(
    keys_and_seeds: Sequence[tuple[RenderSpec, int]], out: Path, settings: RenderSettings, pipe: Any | None = None
) -> int:
    """Re-render given specs with new seeds, overwriting their image and record atomically."""
    if not keys_and_seeds:
        return 0
    renderer = Renderer(settings, pipe)
    return renderer.render(
        [replace(spec, seed=seed) for spec, seed in keys_and_seeds], Path(out), progress=True, desc="re-render"
    )


def _csv(text: str | None) -> list[str] | None:
    return [t.strip() for t in text.split(",") if t.strip()] if text else None


positive_int = opt.positive_int


def main(args: argparse.Namespace) -> int:
    taxonomy = load_taxonomy(args.taxonomy)
    specs = plan_renders(
        taxonomy,
        _csv(args.genders),
        _csv(args.dimensions),
        _csv(args.identities),
        _csv(args.activities),
        portraits=not args.no_portraits,
        renders_per_cell=args.renders_per_cell,
    )
    settings = RenderSettings(
        model=args.model,
        revision=args.revision,
        steps=args.steps,
        guidance=args.guidance,
        width=args.size[0],
        height=args.size[1],
        dtype=args.dtype,
        device=args.device,
        batch_size=args.batch_size,
        max_sequence_length=args.max_sequence_length,
    )
    share = Share.from_env(args.shard)
    report = render_all(specs, args.out, settings, share, progress=True)
    print(
        f"rank {share.rank}/{share.world} shard {share.job}/{share.jobs}: {report.assigned} assigned, "
        f"{report.already_done} already done, {report.rendered} rendered into {args.out}",
        file=sys.stderr,
    )
    return 0
