"""Upload plans: exactly the files the card describes, skip-by-hash, Spaces, and the token kept secret.

The Hub cannot be reached here, so `execute` is exercised against a recorder that stands in for
HfApi (the one place a stand-in is used: the service itself is out of reach)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from huggingface_hub.hf_api import RepoFile

from tests import REPO_ROOT
from vignette_bench.cli import main as vignette
from vignette_bench.upload.plan import (
    CreateRepo,
    RemoteFile,
    SkipUnchanged,
    UploadFolder,
    describe,
    execute,
    git_blob_sha1,
    sha256_file,
    to_remote,
)
from vignette_bench.upload.targets import UploadError, dataset_files, dataset_plan, front_matter, metrics_plan


def main(argv):
    """`vignette upload ARGV` in-process."""
    return vignette(["upload", *argv])


ROOT = REPO_ROOT
SECRET = "hf_SECRETtokenVALUEnotToBePrinted123"


def _sample_source(out: Path) -> Path:
    """The builder's placeholder sample source (`vignette build sample --out DIR`)."""
    subprocess.run(
        [sys.executable, "-m", "vignette_bench", "build", "sample", "--out", str(out)],
        check=True,
        cwd=ROOT,
        capture_output=True,
        timeout=300,
    )
    return out


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    return _sample_source(tmp_path_factory.mktemp("src") / "vignette-sample")


def test_dataset_plan_lists_exactly_the_described_files(source):
    card = front_matter(source / "README.md")
    files = dataset_files(source)
    assert "README.md" in files and "renders/index.parquet" in files
    assert any(f.startswith("renders/") and f.endswith(".tar") for f in files)
    assert any(f.startswith("taxonomy/") for f in files)
    steps = dataset_plan(source, "org/vignette")
    assert steps[0] == CreateRepo("org/vignette", "dataset", False)
    upload = steps[-1]
    assert isinstance(upload, UploadFolder) and set(upload.paths) == set(files)
    on_disk = {p.relative_to(source).as_posix() for p in source.rglob("*") if p.is_file()}
    assert set(upload.paths) == on_disk  # nothing left out, nothing extra
    assert {c["config_name"] for c in card["configs"]} >= {"index", "news", "identity_contrast_specs"}


def test_stray_file_and_empty_config_are_rejected(source, tmp_path):
    copy = tmp_path / "src"
    shutil.copytree(source, copy)
    (copy / "renders" / "notes.txt").write_text("left over")
    with pytest.raises(UploadError, match="renders/notes.txt"):
        dataset_plan(copy, "org/x")
    (copy / "renders" / "notes.txt").unlink()
    readme = copy / "README.md"
    text = readme.read_text()
    meta = front_matter(readme)
    meta["configs"].append({"config_name": "ghost", "data_files": "ghost/*.parquet"})
    body = text.split("---", 2)[2]
    readme.write_text("---\n" + yaml.safe_dump(meta) + "---" + body)
    with pytest.raises(UploadError, match="ghost"):
        dataset_plan(copy, "org/x")


def test_the_folder_it_would_upload_loads_with_datasets_and_vignette(source):
    import datasets
    import yaml

    import vignette

    head = (source / "README.md").read_text().split("---\n")[1]
    for config in yaml.safe_load(head)["configs"]:  # every declared config, with plain datasets
        assert len(datasets.load_dataset(str(source), config["config_name"], split="test")) > 0
    assert len(vignette.load_dataset(str(source), "renders", split="test")) > 0  # shards: webdataset builder

    pairs = vignette.load_dataset(str(source), "identity_contrast")
    row = pairs[0]
    assert row["config"] == "identity_contrast" and row["image"].size[0] > 0


def test_unchanged_files_are_skipped_by_hash(tmp_path):
    folder = tmp_path / "f"
    (folder / "renders").mkdir(parents=True)
    (folder / "renders" / "a.tar").write_bytes(b"a" * 100)
    (folder / "renders" / "b.tar").write_bytes(b"b" * 100)
    (folder / "README.md").write_text("---\nconfigs:\n- config_name: renders\n  data_files: renders/*.tar\n---\n# x\n")
    a_sha = sha256_file(folder / "renders" / "a.tar")
    # A real huggingface_hub RepoFile, as list_repo_tree(expand=True) returns it.
    lfs_same = RepoFile(
        path="renders/a.tar", size=100, oid="x" * 40, lfs={"size": 100, "oid": a_sha, "pointerSize": 130}
    )
    lfs_diff = RepoFile(
        path="renders/b.tar", size=100, oid="y" * 40, lfs={"size": 100, "oid": "0" * 64, "pointerSize": 130}
    )
    readme_same = RepoFile(
        path="README.md", size=(folder / "README.md").stat().st_size, oid=git_blob_sha1(folder / "README.md")
    )
    remote = {r.path: to_remote(r) for r in (lfs_same, lfs_diff, readme_same)}
    steps = dataset_plan(folder, "org/x", remote=remote)
    skip = next(s for s in steps if isinstance(s, SkipUnchanged))
    upload = steps[-1]
    assert set(skip.paths) == {"renders/a.tar", "README.md"}
    assert upload.paths == ("renders/b.tar",)
    # git blob id matches `git hash-object`
    out = subprocess.run(["git", "hash-object", str(folder / "README.md")], capture_output=True, text=True)
    if out.returncode == 0:
        assert out.stdout.strip() == git_blob_sha1(folder / "README.md")
    # a repo that does not exist yet: everything is uploaded
    assert set(dataset_plan(folder, "org/x", remote=None)[-1].paths) == {"README.md", "renders/a.tar", "renders/b.tar"}
    assert RemoteFile("renders/a.tar", 99, a_sha, None) != remote["renders/a.tar"]


METRIC = """import datasets
import evaluate
import numpy


class Toy(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(description="toy", citation="", inputs_description="",
                                   features=datasets.Features({"selected": datasets.Value("string")}))

    def _compute(self, selected):
        return {"n": int(numpy.size(selected))}
"""


def _metrics_dir(tmp_path: Path) -> Path:
    d = tmp_path / "metrics" / "toy"
    d.mkdir(parents=True)
    (d / "toy.py").write_text(METRIC)
    (d / "README.md").write_text("---\ntitle: Toy\nsdk_version: 4.44.1\ntags:\n- evaluate\n---\n# Toy\ncard body\n")
    (d / "requirements.txt").write_text("# what toy.py imports\ndatasets\nnumpy  # arrays\n")
    return tmp_path / "metrics"


def test_a_metric_without_declared_requirements_is_refused(tmp_path):
    metrics = _metrics_dir(tmp_path)
    (metrics / "toy" / "requirements.txt").unlink()
    with pytest.raises(UploadError, match="toy/requirements.txt: missing"):
        metrics_plan(metrics, "vignette-bench", tmp_path / "stage")


def test_metrics_become_gradio_spaces(tmp_path):
    steps = metrics_plan(_metrics_dir(tmp_path), "vignette-bench", tmp_path / "stage")
    assert steps[0] == CreateRepo("vignette-bench/toy", "space", False, space_sdk="gradio")
    upload = steps[1]
    assert set(upload.paths) == {"toy.py", "README.md", "app.py", "requirements.txt"}
    staged = upload.folder
    meta = front_matter(staged / "README.md")
    assert meta["sdk"] == "gradio" and meta["app_file"] == "app.py" and meta["title"] == "Toy"
    assert meta["sdk_version"].startswith("3.")  # launch_gradio_widget needs gradio 3's gr.inputs
    assert "card body" in (staged / "README.md").read_text()
    app = (staged / "app.py").read_text()
    compile(app, "app.py", "exec")
    assert 'evaluate.load("vignette-bench/toy")' in app and "launch_gradio_widget(module)" in app
    # the module folder's declared requirements, comments dropped, evaluate added
    assert (staged / "requirements.txt").read_text().split() == ["datasets", "numpy", "evaluate"]
    # the staged module still loads with evaluate on its own
    import evaluate

    assert evaluate.load(str(staged / "toy.py")).compute(selected=["a", "b"]) == {"n": 2}
    with pytest.raises(UploadError, match="owner"):
        metrics_plan(_metrics_dir(tmp_path / "2"), "org/name", tmp_path / "stage2")


def test_real_metric_modules_stage_as_spaces(tmp_path):
    steps = metrics_plan(ROOT / "vignette_bench" / "metrics", "vignette-bench", tmp_path / "stage")
    spaces = [s.repo_id for s in steps if isinstance(s, CreateRepo)]
    assert spaces == [f"vignette-bench/{n}" for n in ("log_odds", "pair_comp", "polarity", "selection_frequency")]
    import evaluate

    for up in (s for s in steps if isinstance(s, UploadFolder)):
        name = up.repo_id.split("/")[1]
        assert set(up.paths) == {f"{name}.py", "README.md", "app.py", "requirements.txt"}
        assert front_matter(up.folder / "README.md")["sdk"] == "gradio"
        # the staged Space module loads alone (no project imports) and computes
        module = evaluate.load(str(up.folder / f"{name}.py"))
        assert module.name
        reqs = [r.split(">")[0] for r in (up.folder / "requirements.txt").read_text().split()]
        assert "evaluate" in reqs and "vignette-bench" in reqs  # as declared in the module folder


class Recorder:
    """Stands in for HfApi (the Hub is unreachable here): records the calls `execute` makes."""

    def __init__(self):
        self.calls = []

    def create_repo(self, repo_id, **kw):
        self.calls.append(("create_repo", repo_id, kw))

    def upload_folder(self, **kw):
        self.calls.append(("upload_folder", kw["repo_id"], kw))


def test_execute_runs_the_steps_in_order(tmp_path):
    steps = metrics_plan(_metrics_dir(tmp_path), "me", tmp_path / "stage")
    api = Recorder()
    execute(steps, api)
    assert [c[0] for c in api.calls] == ["create_repo", "upload_folder"]
    assert api.calls[0][2] == {"repo_type": "space", "private": False, "exist_ok": True, "space_sdk": "gradio"}
    assert sorted(api.calls[1][2]["allow_patterns"]) == sorted(steps[1].paths)


def test_token_is_never_printed_or_written(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_TOKEN", SECRET)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    metrics = _metrics_dir(tmp_path)
    stage = tmp_path / "stage"
    assert main(["metrics", "--repo", "me", "--metrics", str(metrics), "--stage", str(stage), "--dry-run"]) == 0
    dry = capsys.readouterr()
    assert "DRY RUN" in dry.out and "create_repo space:me/toy" in dry.out
    # without --dry-run the Hub is unreachable: the call fails, and still says nothing of the token
    code = main(["metrics", "--repo", "me", "--metrics", str(metrics), "--stage", str(stage)])
    real = capsys.readouterr()
    assert code != 0 and "error" in real.err
    for text in (dry.out, dry.err, real.out, real.err, describe(metrics_plan(metrics, "me", stage))):
        assert SECRET not in text
    for f in tmp_path.rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f


def test_missing_token_is_a_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))  # no saved login there
    code = main(["metrics", "--repo", "me", "--metrics", str(_metrics_dir(tmp_path))])
    assert code == 2 and "HF_TOKEN" in capsys.readouterr().err


def test_results_plan_uploads_validated_entries_with_their_responses(tmp_path):
    from vignette_bench.eval.leaderboard.entry import create, write_entry
    from vignette_bench.eval.simulate import SimSpec, write_run
    from vignette_bench.upload.results import results_plan

    run = write_run(
        tmp_path / "runs" / "a",
        SimSpec(dimensions=("religion",), genders=("female",), n_activities=2, n_traits=2, paradigms=("decision",)),
    )
    entries = tmp_path / "entries"
    entry = create(run, by="me", entry_path=entries / "x.json")
    write_entry(entry, entries / "x.json")
    steps = results_plan(entries, "org/vignette-results", stage=tmp_path / "stage")
    upload = steps[-1]
    eid = entry["entry_id"]
    assert set(upload.paths) == {"README.md", f"entries/{eid}.json", f"runs/{eid}/responses.parquet"}
    staged = __import__("json").loads((tmp_path / "stage" / "entries" / f"{eid}.json").read_text())
    assert staged["responses"]["location"] == f"hf://datasets/org/vignette-results/runs/{eid}/responses.parquet"
    assert staged["responses"]["sha256"] == sha256_file(tmp_path / "stage" / "runs" / eid / "responses.parquet")
    assert dataset_files(tmp_path / "stage") == sorted(upload.paths)  # the card describes exactly these files
    # an entry with an edited number is refused, nothing is staged for it
    entry["metrics"]["decision"]["n_significant"] += 3
    write_entry(entry, entries / "x.json")
    with pytest.raises(UploadError, match="metrics.decision.n_significant"):
        results_plan(entries, "org/vignette-results", stage=tmp_path / "stage2")


def test_results_stage_carries_the_maintainer_keys_beside_the_verifications(tmp_path):
    """Published verifications are checkable on their own: the keys the board trusts travel with them."""
    from vignette_bench.eval.leaderboard.entry import create, write_entry
    from vignette_bench.eval.leaderboard.signing import KEYS_FILE
    from vignette_bench.eval.leaderboard.verify import verification_path
    from vignette_bench.eval.simulate import SimSpec, write_run
    from vignette_bench.upload.results import stage_results

    run = write_run(
        tmp_path / "runs" / "a",
        SimSpec(dimensions=("religion",), genders=("female",), n_activities=2, n_traits=2, paradigms=("decision",)),
    )
    entries = tmp_path / "entries"
    entry = create(run, by="me", entry_path=entries / "x.json")
    write_entry(entry, entries / "x.json")
    (tmp_path / KEYS_FILE).write_text('{"schema_version": 1, "keys": []}\n')
    stage = stage_results(entries, "org/r", tmp_path / "stage")
    assert not (stage / KEYS_FILE).exists()  # no verification: nothing to check them against
    record = verification_path(entries / "x.json", entry["entry_id"])
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text("{}")
    stage = stage_results(entries, "org/r", tmp_path / "stage")
    assert (stage / KEYS_FILE).read_text() == (tmp_path / KEYS_FILE).read_text()


def test_results_stage_never_publishes_a_linked_record_or_key_file(tmp_path):
    """A verification or maintainers.json that is a link would publish whatever it points at: refused (issue 34)."""
    from vignette_bench.eval.leaderboard.entry import create, write_entry
    from vignette_bench.eval.leaderboard.signing import KEYS_FILE
    from vignette_bench.eval.leaderboard.verify import verification_path
    from vignette_bench.eval.simulate import SimSpec, write_run
    from vignette_bench.upload.results import stage_results

    run = write_run(
        tmp_path / "runs" / "a",
        SimSpec(dimensions=("religion",), genders=("female",), n_activities=2, n_traits=2, paradigms=("decision",)),
    )
    entries = tmp_path / "entries"
    entry = create(run, by="me", entry_path=entries / "x.json")
    write_entry(entry, entries / "x.json")
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET")
    record = verification_path(entries / "x.json", entry["entry_id"])
    record.parent.mkdir(parents=True, exist_ok=True)
    record.symlink_to(secret)
    with pytest.raises(UploadError, match="a symbolic link"):
        stage_results(entries, "org/r", tmp_path / "stage")
    record.unlink()
    record.write_text("{}")
    (tmp_path / KEYS_FILE).symlink_to(secret)
    with pytest.raises(UploadError, match=f"{KEYS_FILE}: a symbolic link"):
        stage_results(entries, "org/r", tmp_path / "stage")
