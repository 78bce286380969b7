"""Plans for the three things we publish: the dataset source, the metric Spaces, the results.

Each builder checks the local folder first (a card that describes every file, a metric with its
card and module) and returns the steps of `upload.plan`; nothing here contacts the Hub.
"""

from __future__ import annotations

import fnmatch
import re
import shutil
from collections.abc import Mapping
from pathlib import Path

import yaml

from vignette_bench.errors import VignetteError
from vignette_bench.upload.plan import CreateRepo, RemoteFile, Step, UploadFolder, local_files, split_changed

# Files of the source layout (docs/FORMATS.md) that no `configs:` entry names.
# Files a source holds beside its card's (parquet) configs: the taxonomy, the renders' WebDataset shards
# (read through the index, or with the webdataset builder) and the news subset's and protocol configs' manifests.
LAYOUT_FILES = (
    "README.md",
    "taxonomy/*.csv",
    "renders/index.parquet",
    "renders/*.tar",
    "reduced/*.tar",
    "news/manifest.json",
    "protocol/*/manifest.json",
)
SAFE_PATH = re.compile(r"^[A-Za-z0-9_./-]+$")
# evaluate 0.4.6's launch_gradio_widget uses gr.inputs/gr.outputs, which gradio 4 removed.
GRADIO_SDK_VERSION = "3.50.2"


class UploadError(VignetteError):
    """A folder is not ready to publish; the message names the file and what to do."""


def front_matter(readme: Path) -> dict:
    text = readme.read_text(encoding="utf-8")
    m = re.match(r"^---\s*\n(.*?)\n---\s*\n", text, re.S)
    if not m:
        raise UploadError(f"{readme}: no YAML front matter (--- ... ---) at the top")
    data = yaml.safe_load(m.group(1)) or {}
    if not isinstance(data, dict):
        raise UploadError(f"{readme}: front matter is not a mapping")
    return data


def config_patterns(card: dict, readme: Path) -> dict[str, list[str]]:
    """config name -> its data_files globs, from the card's `configs:` (every accepted shape)."""
    configs = card.get("configs")
    if not configs:
        raise UploadError(
            f"{readme}: the card has no `configs:`; add one per data config (index, news, <config>_specs)"
        )
    out: dict[str, list[str]] = {}
    for c in configs:
        name = c.get("config_name", "default")
        files = c.get("data_files")
        if files is None:
            raise UploadError(f"{readme}: config {name!r} has no data_files")
        pats: list[str] = []
        for item in files if isinstance(files, list) else [files]:
            if isinstance(item, str):
                pats.append(item)
            elif isinstance(item, dict):
                p = item.get("path")
                pats += p if isinstance(p, list) else [str(p)]
        out[name] = pats
    return out


def _files_under(folder: Path) -> list[str]:
    """Regular files inside ``folder``. A symlink anywhere is refused: it could pull a file from outside
    the folder (a token, a home directory) into a public upload."""
    skip = {".git", ".cache", ".huggingface"}
    out = []
    for p in folder.rglob("*"):
        rel = p.relative_to(folder)
        if skip.intersection(rel.parts):
            continue
        if p.is_symlink():
            raise UploadError(f"{folder}: {rel.as_posix()} is a symbolic link; upload only regular files (copy it in)")
        if p.is_file():
            out.append(rel.as_posix())
    return sorted(out)


def _check_safe(paths: list[str], folder: Path) -> None:
    bad = [p for p in paths if not SAFE_PATH.match(p)]
    if bad:
        raise UploadError(f"{folder}: file name(s) with characters outside [A-Za-z0-9_./-]: {bad[:5]}; rename them")


def dataset_files(folder: Path) -> list[str]:
    """Exactly the files the card describes; raises on a stray file or a config matching nothing."""
    readme = folder / "README.md"
    if not readme.is_file():
        raise UploadError(
            f"{folder}: no README.md (dataset card); build the source with "
            "`vignette build sample --out DIR` or the shard step"
        )
    patterns = config_patterns(front_matter(readme), readme)
    files = _files_under(folder)
    _check_safe(files, folder)
    for name, pats in patterns.items():
        if not any(fnmatch.fnmatchcase(f, p) for f in files for p in pats):
            raise UploadError(f"{readme}: config {name!r} data_files {pats} match no file in {folder}")
    allowed = [p for pats in patterns.values() for p in pats] + list(LAYOUT_FILES)
    stray = [f for f in files if not any(fnmatch.fnmatchcase(f, p) for p in allowed)]
    if stray:
        raise UploadError(
            f"{folder}: file(s) the card does not describe: {stray[:10]}; remove them or add "
            "them to a config's data_files"
        )
    return files


def _verify_before_planning(folder: Path) -> None:
    """A source is uploaded only if its index and shards agree (corrupt shards and garbage indexes stay home)."""
    if not (folder / "renders" / "index.parquet").is_file():
        return  # a card-only or news-only folder: nothing to verify
    from vignette_bench.dataset_builder.protocol_sample import verify_protocol_sample
    from vignette_bench.dataset_builder.verify import verify_source

    problems = [*verify_source(str(folder), progress=False), *verify_protocol_sample(folder)]
    if problems:
        head = "; ".join(str(p) for p in problems[:3])
        raise UploadError(
            f"{folder}: `vignette build verify` finds {len(problems)} problem(s), e.g. {head}; fix them first"
        )


def dataset_plan(
    folder: Path, repo_id: str, *, private: bool = False, remote: Mapping[str, RemoteFile] | None = None
) -> list[Step]:
    folder = Path(folder)
    names = dataset_files(folder)
    _verify_before_planning(folder)
    files = local_files(folder, names)
    todo, skip = split_changed(repo_id, files, remote)
    steps: list[Step] = [CreateRepo(repo_id, "dataset", private)]
    if skip:
        steps.append(skip)
    steps.append(
        UploadFolder(
            repo_id,
            "dataset",
            folder,
            tuple(f.path_in_repo for f in todo),
            "Upload VIGNETTE source (card, taxonomy, renders, index)",
        )
    )
    return steps


# ---- metrics as Spaces -------------------------------------------------------------------

APP_PY = """import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load("{repo_id}")
launch_gradio_widget(module)
"""
# Import names in metric modules that are not pip names, or ship with Python.


def metric_names(metrics_dir: Path) -> list[str]:
    names = sorted(p.name for p in Path(metrics_dir).iterdir() if (p / f"{p.name}.py").is_file())
    if not names:
        raise UploadError(f"{metrics_dir}: no metric modules (<name>/<name>.py inside it)")
    return names


def module_requirements(module: Path) -> list[str]:
    """What a metric module needs, as declared in its folder's requirements.txt (comments dropped).

    The module folder is the one place that says it, so a module copied out alone (evaluate's
    cache, a Space) carries the same list. `vignette-bench` (the statistics library) is not on
    PyPI: staging with the project's wheel pins that line to the wheel the Space carries (pin_project).
    """
    declared = module.parent / "requirements.txt"
    if not declared.is_file():
        raise UploadError(f"{declared}: missing; every metric module declares its requirements beside it")
    lines = [line.split("#", 1)[0].strip() for line in declared.read_text(encoding="utf-8").splitlines()]
    reqs = [line for line in lines if line]
    if not any(r.split(">")[0].split("=")[0].strip() == "evaluate" for r in reqs):
        reqs.append("evaluate")
    return reqs


PROJECT = "vignette-bench"
WHEELS = "wheels"  # the Space folder that holds the project's wheel


def space_file_url(repo_id: str, path: str) -> str:
    """The URL a Space's build (pip) downloads one of the Space's own files from."""
    return f"https://huggingface.co/spaces/{repo_id}/resolve/main/{path}"


def pin_project(requirements: list[str], wheel_url: str) -> list[str]:
    """The requirements with the `vignette-bench` line (on no index) replaced by a direct reference to a wheel."""
    out = []
    for req in requirements:
        name = re.split(r"[\s<>=!~;\[@]", req, maxsplit=1)[0].strip().lower().replace("_", "-")
        out.append(f"{PROJECT} @ {wheel_url}" if name == PROJECT else req)
    return out


def build_project_wheel(out: Path) -> Path:
    """A wheel of this checkout (`pip wheel --no-deps --no-build-isolation`); an installed copy has no source to build."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    if not (root / "pyproject.toml").is_file():
        raise UploadError(
            f"{root}: not a checkout of the project (no pyproject.toml) to build the wheel the metric Spaces "
            "install; pass --wheel PATH (a vignette_bench-*.whl, e.g. from `pip wheel --no-deps .` in a clone)"
        )
    Path(out).mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "-q",
        "-w",
        str(out),
        str(root),
    ]
    done = subprocess.run(command, capture_output=True, text=True)
    wheels = sorted(Path(out).glob("vignette_bench-*.whl"))
    if done.returncode != 0 or not wheels:
        raise UploadError(f"building the project wheel failed ({' '.join(command)}): {done.stderr.strip()[-600:]}")
    return wheels[-1]


def stage_metric_space(metrics_dir: Path, name: str, repo_id: str, stage: Path, wheel: Path | None = None) -> Path:
    """Copy one metric into a Space folder: module, card with Space front matter, app.py, requirements.

    With `wheel` (the project's wheel) the Space carries it under wheels/ and its requirements.txt names it by
    the Space's own URL (`vignette-bench @ https://huggingface.co/spaces/OWNER/NAME/resolve/main/wheels/...`), so
    the Space and `evaluate.load("OWNER/NAME")` install; without it the line stays `vignette-bench`, on no index."""
    src = Path(metrics_dir) / name
    readme = src / "README.md"
    if not readme.is_file():
        raise UploadError(f"{src}: no README.md metric card; the Space shows it as its page")
    out = Path(stage) / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    shutil.copy2(src / f"{name}.py", out / f"{name}.py")
    text = readme.read_text(encoding="utf-8")
    meta = front_matter(readme)
    body = re.sub(r"^---\s*\n.*?\n---\s*\n", "", text, count=1, flags=re.S)
    # The Space needs these keys; the card's other keys are kept. sdk_version is forced: the
    # widget (evaluate.utils.launch_gradio_widget) calls gr.inputs/gr.outputs, gone in gradio 4.
    meta = {"title": name, "pinned": False, **meta}
    meta["sdk"], meta["app_file"], meta["sdk_version"] = "gradio", "app.py", GRADIO_SDK_VERSION
    tags = list(meta.get("tags") or [])
    meta["tags"] = tags + [t for t in ("evaluate", "metric") if t not in tags]
    (out / "README.md").write_text(
        "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n" + body, encoding="utf-8"
    )
    (out / "app.py").write_text(APP_PY.format(repo_id=repo_id), encoding="utf-8")
    requirements = module_requirements(src / f"{name}.py")
    if wheel is not None:
        wheel = Path(wheel)
        if not wheel.is_file() or not wheel.name.startswith("vignette_bench-") or wheel.suffix != ".whl":
            raise UploadError(f"{wheel}: not a vignette_bench-*.whl file")
        (out / WHEELS).mkdir()
        shutil.copy2(wheel, out / WHEELS / wheel.name)
        requirements = pin_project(requirements, space_file_url(repo_id, f"{WHEELS}/{wheel.name}"))
    (out / "requirements.txt").write_text("\n".join(requirements) + "\n", encoding="utf-8")
    return out


def metrics_plan(
    metrics_dir: Path,
    owner: str,
    stage: Path,
    *,
    private: bool = False,
    remotes: Mapping[str, Mapping[str, RemoteFile] | None] | None = None,
    wheel: Path | None = None,
) -> list[Step]:
    """One gradio Space per metric, `{owner}/{name}`; `remotes` maps a Space id to its listing; `wheel`: the
    project's wheel each Space carries and installs (stage_metric_space)."""
    if "/" in owner:
        raise UploadError(
            f"--repo {owner!r}: for metrics give the owner (user or org); each metric "
            "becomes the Space OWNER/<metric name>"
        )
    steps: list[Step] = []
    for name in metric_names(Path(metrics_dir)):
        repo_id = f"{owner}/{name}"
        folder = stage_metric_space(Path(metrics_dir), name, repo_id, Path(stage), wheel)
        files = local_files(folder, _files_under(folder))
        todo, skip = split_changed(repo_id, files, (remotes or {}).get(repo_id))
        steps.append(CreateRepo(repo_id, "space", private, space_sdk="gradio"))
        if skip:
            steps.append(skip)
        steps.append(
            UploadFolder(repo_id, "space", folder, tuple(f.path_in_repo for f in todo), f"Upload metric {name}")
        )
    return steps
