"""The board's CI on real git repositories: `leaderboard init` makes the board, a maintainer commits a verified
entry on main, and each pull request (a branch in a `git worktree`) is one attack class of issue 34, run through
`vignette leaderboard check-pr` exactly as the template's workflow runs it. Entries are real runner runs of the
random responder over the placeholder sample source, made with the real CLI."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from vignette_bench.cli import main as cli
from vignette_bench.dataset_builder.sample import build_sample
from vignette_bench.eval.leaderboard.boardfiles import ENTRY_MAX_BYTES
from vignette_bench.eval.leaderboard.entry import entry_id_of
from vignette_bench.eval.leaderboard.signing import generate_key, public_key_text
from vignette_bench.eval.leaderboard.template import WORKFLOW_PATH

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.org",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.org",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV, "HOME": str(cwd)}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


# The board's official source (a maintainer's --source; official.py): the world's sample source, set by `world`.
SOURCE: list[str] = []


def lb(*argv: str) -> int:
    """`vignette leaderboard ARGV`; commands that read the official source get the world's unless given one."""
    extra = ["--source", SOURCE[0]] if SOURCE and argv[0] in OFFICIAL_READERS and "--source" not in argv else []
    return cli(["leaderboard", *argv, *extra])


OFFICIAL_READERS = ("validate", "build", "verify", "check-pr")


def run(root: Path, name: str, *extra: str, model: str = "random") -> Path:
    out = root / "runs" / name
    argv = ["run", "--source", str(root / "source"), "--config", "identity_contrast", "--model", model]
    assert cli([*argv, "--out", str(out), "--no-progress", *extra]) == 0
    return out


def commit(cwd: Path, message: str) -> None:
    git(cwd, "add", "-A")
    git(cwd, "commit", "-qm", message)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """root/source (the sample source), root/runs/* (runs made outside the board), root/maintainer.pem (outside
    every repository) and root/board: a git repository whose main holds one honest entry, verified and signed."""
    root = tmp_path_factory.mktemp("ci")
    SOURCE[:] = [str(root / "source")]
    build_sample(root / "source", size=64, identities=("muslim", "hindu", "old", "young"), activities=("cooking",))
    run(root, "alice")  # reference/random-seed0
    run(root, "bob", model="random:seed=1")  # reference/random-seed1: an honest new entry
    run(
        root, "alice-seed3", "--seed", "3", model="random:seed=0"
    )  # alice's model again (the spec pins it), another seed
    board = root / "board"
    assert lb("init", "--out", str(board)) == 0
    key = generate_key(root / "maintainer.pem")
    keys = {"schema_version": 1, "keys": [{"name": "maintainer", "public_key": public_key_text(key.public_key())}]}
    (board / "maintainers.json").write_text(json.dumps(keys))
    git(board, "init", "-q", "-b", "main")
    commit(board, "board")
    assert lb("create", str(root / "runs" / "alice"), "--by", "alice", "--out", str(board / "entries")) == 0
    (entry,) = (board / "entries").glob("*.json")
    assert lb("verify", str(entry), "--model", "random", "--limit", "10", "--key", str(root / "maintainer.pem")) == 0
    commit(board, "alice's entry, verified")
    return root


def alice(world: Path) -> str:
    (path,) = (world / "board" / "entries").glob("*.json")
    return path.stem


def branch(world: Path, name: str) -> Path:
    """A pull request's working tree: a new branch from main in its own `git worktree`."""
    tree = world / "pr" / name
    git(world / "board", "worktree", "add", "-q", "-b", name, str(tree), "main")
    return tree


def check(world: Path, head: str, monkeypatch, capsys, *extra: str) -> tuple[int, str]:
    """`check-pr` run in the board repository, as the workflow runs it: (exit status, stderr)."""
    monkeypatch.chdir(world / "board")
    capsys.readouterr()
    rc = lb("check-pr", "--base", "main", "--head", head, *extra)
    return rc, capsys.readouterr().err


def refused(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error: ")]


def add_bob(world: Path, tree: Path) -> Path:
    assert lb("create", str(world / "runs" / "bob"), "--by", "bob", "--out", str(tree / "entries")) == 0
    (path,) = [p for p in (tree / "entries").glob("*.json") if p.stem != alice(world)]
    return path


# --- the honest pull request ----------------------------------------------------------------------------------


def test_an_honest_pull_request_passes_and_the_base_entry_stays_verified(world, monkeypatch, capsys):
    tree = branch(world, "honest")
    entry = add_bob(world, tree)
    assert (tree / "runs" / entry.stem / "responses.parquet").is_file()  # create copied the responses in
    commit(tree, "bob's entry")
    site = world / "honest-site"
    rc, err = check(world, "honest", monkeypatch, capsys, "--out", str(site))
    assert rc == 0, err
    assert not refused(err)
    md = (site / "leaderboard.md").read_text()
    assert "reference/random-seed1" in md and "verified (100% of 10" in md  # BASE's key verifies alice's record


# --- item 1: what a pull request may not do -------------------------------------------------------------------


def test_a_pull_request_that_lists_its_own_key_and_signs_its_own_record_is_refused(world, monkeypatch, capsys):
    tree = branch(world, "self-signed")
    entry = add_bob(world, tree)
    own = world / "submitter.pem"
    key = generate_key(own)
    listed = json.loads((tree / "maintainers.json").read_text())
    listed["keys"].append({"name": "me", "public_key": public_key_text(key.public_key())})
    (tree / "maintainers.json").write_text(json.dumps(listed))
    assert lb("verify", str(entry), "--model", "random:seed=1", "--limit", "5", "--key", str(own)) == 0
    commit(tree, "bob, verified by bob")
    rc, err = check(world, "self-signed", monkeypatch, capsys)
    assert rc == 1
    assert "error: maintainers.json: changes maintainers.json (who is trusted" in err
    assert f"error: verifications/{entry.stem}.json: a pull request may only add" in err


def test_symlinked_maintainers_json_and_verification_are_refused(world, monkeypatch, capsys):
    tree = branch(world, "links")
    entry = add_bob(world, tree)
    foreign = world / "foreign-keys.json"
    foreign.write_text('{"schema_version": 1, "keys": [{"name": "FOREIGN-SECRET", "public_key": "x"}]}')
    (tree / "maintainers.json").unlink()
    (tree / "maintainers.json").symlink_to(foreign)
    (tree / "verifications" / f"{entry.stem}.json").symlink_to(
        world / "board" / "verifications" / f"{alice(world)}.json"
    )
    commit(tree, "links")
    rc, err = check(world, "links", monkeypatch, capsys)
    assert rc == 1
    assert "error: maintainers.json: a symbolic link" in err
    assert f"error: verifications/{entry.stem}.json: a symbolic link" in err
    assert "FOREIGN-SECRET" not in err


def test_build_never_follows_a_linked_maintainers_json_or_verification(world, tmp_path, capsys):
    """Outside check-pr too: `build` on a tree whose maintainers.json or verification is a link."""
    board = tmp_path / "board"
    shutil.copytree(world / "board", board, ignore=shutil.ignore_patterns(".git"))
    foreign = tmp_path / "foreign.json"
    foreign.write_text('{"FOREIGN-SECRET": "value"}')
    (board / "maintainers.json").unlink()
    (board / "maintainers.json").symlink_to(foreign)
    capsys.readouterr()
    assert lb("build", "--entries", str(board / "entries"), "--out", str(tmp_path / "site")) == 0
    err = capsys.readouterr().err
    assert "maintainers.json: a symbolic link" in err and "FOREIGN-SECRET" not in err
    (board / "maintainers.json").unlink()
    shutil.copy(world / "board" / "maintainers.json", board / "maintainers.json")
    record = board / "verifications" / f"{alice(world)}.json"
    real = tmp_path / "record.json"
    shutil.move(record, real)
    record.symlink_to(real)  # the maintainer's own, valid record, but through a link
    assert lb("build", "--entries", str(board / "entries"), "--out", str(tmp_path / "site")) == 0
    err = capsys.readouterr().err
    assert f"verifications/{alice(world)}.json: a symbolic link" in err
    assert "verified (" not in (tmp_path / "site" / "leaderboard.md").read_text()


def test_rewriting_an_existing_entry_is_refused(world, monkeypatch, capsys):
    tree = branch(world, "rewrite")
    victim = tree / "entries" / f"{alice(world)}.json"
    entry = json.loads(victim.read_text())
    entry["submitted"]["by"] = "mallory"
    victim.write_text(json.dumps(entry, indent=2))
    commit(tree, "rewrite alice")
    rc, err = check(world, "rewrite", monkeypatch, capsys)
    assert rc == 1
    assert refused(err) == [
        f"error: entries/{alice(world)}.json: changes an existing entry (entries are never rewritten; a new run is a "
        "new entry, once its old one is removed by a maintainer); a pull request may only add entries"
    ]


def test_a_second_entry_of_the_same_model_config_and_revision_is_refused(world, monkeypatch, capsys):
    tree = branch(world, "second")
    assert lb("create", str(world / "runs" / "alice-seed3"), "--by", "alice", "--out", str(tree / "entries")) == 0
    (new,) = [p for p in (tree / "entries").glob("*.json") if p.stem != alice(world)]
    assert new.stem != alice(world)  # another seed: another entry id
    commit(tree, "alice again, seed 3")
    rc, err = check(world, "second", monkeypatch, capsys)
    assert rc == 1
    assert (
        f"error: entries/{new.name}: the same model, revision, configs and dataset revision as "
        f"entries/{alice(world)}.json" in err
    )


def test_a_victims_entry_id_under_another_file_name_is_refused(world, monkeypatch, capsys):
    tree = branch(world, "steal-id")
    shutil.copy(tree / "entries" / f"{alice(world)}.json", tree / "entries" / "aaa.json")
    commit(tree, "aaa")
    rc, err = check(world, "steal-id", monkeypatch, capsys)
    assert rc == 1
    assert f"error: entries/aaa.json: holds entry_id '{alice(world)}'; an entry file is named by its own" in err
    assert f"error: entries/aaa.json: the same entry id as entries/{alice(world)}.json" in err


def test_build_keeps_the_file_named_by_its_entry_id_and_rejects_the_impostor(world, tmp_path, capsys):
    board = tmp_path / "board"
    shutil.copytree(world / "board", board, ignore=shutil.ignore_patterns(".git"))
    shutil.copy(board / "entries" / f"{alice(world)}.json", board / "entries" / "aaa.json")  # sorts first
    capsys.readouterr()
    assert lb("build", "--entries", str(board / "entries"), "--out", str(tmp_path / "site")) == 1
    err = capsys.readouterr().err
    assert "aaa.json: duplicate entry_id" in err
    assert "verified (100% of 10" in (tmp_path / "site" / "leaderboard.md").read_text()  # the victim's row stays


def test_deleting_a_verification_is_refused(world, monkeypatch, capsys):
    tree = branch(world, "unverify")
    git(tree, "rm", "-q", f"verifications/{alice(world)}.json")
    commit(tree, "drop alice's verification")
    rc, err = check(world, "unverify", monkeypatch, capsys)
    assert rc == 1
    assert refused(err) == [
        f"error: verifications/{alice(world)}.json: deletes a verification (only a maintainer commits "
        "verifications/); a pull request may only add entries"
    ]


def test_an_oversized_entry_is_refused_unread(world, monkeypatch, capsys, tmp_path):
    tree = branch(world, "oversize")
    entry = add_bob(world, tree)
    entry.write_text(entry.read_text() + " " * ENTRY_MAX_BYTES)  # still valid JSON
    commit(tree, "big")
    rc, err = check(world, "oversize", monkeypatch, capsys)
    assert rc == 1
    assert f"error: entries/{entry.name}: " in err and f"over the cap of {ENTRY_MAX_BYTES:,}" in err
    # and in build, outside check-pr: the oversized file and a link to /dev/zero are rejected without reading them
    board = tmp_path / "board"
    shutil.copytree(tree, board, ignore=shutil.ignore_patterns(".git"))
    (board / "entries" / "zero.json").symlink_to("/dev/zero")
    capsys.readouterr()
    assert lb("build", "--entries", str(board / "entries"), "--out", str(tmp_path / "site")) == 1
    err = capsys.readouterr().err
    assert f"{entry.name}: " in err and "over the cap" in err and "zero.json: a symbolic link" in err
    # `validate` of a file named on the command line follows it, but reads at most the cap
    assert lb("validate", str(board / "entries" / "zero.json")) == 1
    assert f"over the cap of {ENTRY_MAX_BYTES:,} bytes" in capsys.readouterr().err


def test_anything_but_added_entries_is_refused(world, monkeypatch, capsys):
    tree = branch(world, "extras")
    (tree / WORKFLOW_PATH).write_text("name: board\n")  # disable the check
    (tree / "runs" / "x").mkdir()
    (tree / "runs" / "x" / "responses.parquet").write_bytes(b"PAR1")
    (tree / "notes.txt").write_text("hi")
    commit(tree, "extras")
    rc, err = check(world, "extras", monkeypatch, capsys)
    assert rc == 1
    assert f"error: {WORKFLOW_PATH}: changes an existing file" in err
    assert "error: notes.txt: a pull request may only add entries/<entry_id>.json and" in err
    assert "error: runs/x/responses.parquet: responses without their entry entries/x.json" in err


def test_a_board_in_a_subfolder_of_a_project_repository(world, tmp_path, monkeypatch, capsys):
    """`--board leaderboard`: the project's own files (a link among them) are the base's and left alone; a pull
    request still may only add entries under the board's folder."""
    proj = tmp_path / "proj"
    shutil.copytree(world / "board", proj / "leaderboard", ignore=shutil.ignore_patterns(".git"))
    (proj / "README.md").write_text("the project")
    (proj / "docs").symlink_to("leaderboard")
    git(tmp_path, "init", "-q", "-b", "main", str(proj))
    commit(proj, "project with its board")
    git(proj, "checkout", "-q", "-b", "bob")
    assert lb("create", str(world / "runs" / "bob"), "--by", "bob", "--out", str(proj / "leaderboard" / "entries")) == 0
    commit(proj, "bob")
    monkeypatch.chdir(proj)
    capsys.readouterr()
    assert lb("check-pr", "--base", "main", "--head", "bob", "--board", "leaderboard") == 0, capsys.readouterr().err
    (proj / "src.py").write_text("print('hi')")
    commit(proj, "and some code")
    assert lb("check-pr", "--base", "main", "--head", "bob", "--board", "leaderboard") == 1
    assert refused(capsys.readouterr().err) == [
        "error: src.py: a pull request may only add leaderboard/entries/<entry_id>.json and "
        "leaderboard/runs/<entry_id>/responses.parquet (entry ids: lower-case letters, digits, '-')"
    ]


# --- item 6: names --------------------------------------------------------------------------------------------


def _renamed(world: Path, tree: Path, model_id: str) -> Path:
    """bob's entry with every answer's model_id (and the entry's) renamed: sha256, entry id and file name follow."""
    entry_path = add_bob(world, tree)
    entry = json.loads(entry_path.read_text())
    old = tree / "runs" / entry_path.stem
    frame = pd.read_parquet(old / "responses.parquet")
    frame["model_id"] = model_id
    eid = entry_id_of(model_id, entry["adapter"], entry["sample"], entry["dataset"]["revision"])
    shutil.rmtree(old)
    entry_path.unlink()  # (a zero-width variant slugs to bob's own entry id)
    (tree / "runs" / eid).mkdir()
    frame.to_parquet(tree / "runs" / eid / "responses.parquet")
    entry["model"]["id"], entry["entry_id"] = model_id, eid
    data = (tree / "runs" / eid / "responses.parquet").read_bytes()
    entry["responses"].update(location=f"../runs/{eid}/responses.parquet", sha256=hashlib.sha256(data).hexdigest())
    path = tree / "entries" / f"{eid}.json"
    path.write_text(json.dumps(entry, indent=2))
    return path


@pytest.mark.parametrize(
    "model_id, why",
    [
        ("reference/random-\u200bseed1", "invisible or control character U+200B ZERO WIDTH SPACE"),
        ("reference/r\u0430ndom-seed1", "non-ASCII character U+0430 CYRILLIC SMALL LETTER A"),
        ("reference/random-seed1\u202egnp.exe", "invisible or control character U+202E RIGHT-TO-LEFT OVERRIDE"),
    ],
    ids=["zero-width", "homoglyph", "bidi"],
)
def test_look_alike_and_invisible_names_are_refused(world, monkeypatch, capsys, model_id, why):
    tree = branch(world, f"name-{len(model_id)}-{ord(max(model_id))}")
    path = _renamed(world, tree, model_id)
    commit(tree, "a look-alike name")
    rc, err = check(world, tree.name, monkeypatch, capsys)
    assert rc == 1
    assert f"error: entries/{path.name}: model.id: {why}" in err
    assert "\u202e" not in err and "\u200b" not in err  # shown as code points, never acting on the log


def test_the_same_answers_under_another_name_are_one_conflict(world, monkeypatch, capsys):
    """bob's answers submitted twice, once as another model: the board would show two rows of one set of answers."""
    tree = branch(world, "two-names")
    path = _renamed(world, tree, "someone/else")
    assert lb("create", str(world / "runs" / "bob"), "--by", "bob", "--out", str(tree / "entries")) == 0
    bob = [p for p in (tree / "entries").glob("*.json") if p.stem not in (alice(world), path.stem)][0]
    commit(tree, "bob twice")
    rc, err = check(world, "two-names", monkeypatch, capsys)
    assert rc == 1
    assert f"error: entries/{path.name}: conflict: the same answers as {bob.name}" in err
    assert f"error: entries/{bob.name}: conflict: the same answers as {path.name}" in err


def test_markdown_copy_has_no_live_links_and_no_bidi_override(world, tmp_path, capsys):
    """A model id with a bare URL renders as text in GFM (markdown-it with linkify, as GitHub and the Hub link bare
    URLs), and a U+202E in a rejected file's name reaches neither the page nor the Markdown."""
    from markdown_it import MarkdownIt

    from vignette_bench.eval.leaderboard.names import defang

    board = tmp_path / "board"
    shutil.copytree(world / "board", board, ignore=shutil.ignore_patterns(".git"))
    url_id = "evil.example/see https://evil.example/x?a=b www.evil.example me@evil.example"
    _renamed(world, board, url_id)
    (board / "entries" / "bad\u202egnp.json").write_text("{")
    capsys.readouterr()
    site = tmp_path / "site"
    assert lb("build", "--entries", str(board / "entries"), "--out", str(site)) == 1
    md = (site / "leaderboard.md").read_text()
    assert defang("https://evil.example/x") == "https[:]//evil[.]example/x"
    rendered = MarkdownIt("gfm-like").render(md)
    assert "<table>" in rendered and "<a " not in rendered  # linkify would link every bare URL
    assert "https://evil.example" not in md and "evil[.]example" in rendered
    page = (site / "leaderboard.html").read_text()
    assert "\u202e" not in md and "\u202e" not in page and "bad&lt;U+202E&gt;gnp.json" in page


def test_create_refuses_invisible_names_and_normalises_the_submitter(world, tmp_path, capsys):
    out = tmp_path / "entries"
    assert (
        lb("create", str(world / "runs" / "bob"), "--by", "b\u200bob", "--out", str(out)) == 2
    )  # an error, not a judgement (docs/cli.md)
    assert "submitted.by: invisible or control character U+200B ZERO WIDTH SPACE" in capsys.readouterr().err
    assert lb("create", str(world / "runs" / "bob"), "--by", "\uff42\uff4f\uff42", "--out", str(out)) == 0  # full-width
    (path,) = out.glob("*.json")
    assert json.loads(path.read_text())["submitted"]["by"] == "bob"


# --- the workflow file itself ---------------------------------------------------------------------------------


def test_the_template_workflow_runs_check_pr_on_a_fetched_pull_request(world, tmp_path):
    """The workflow's own `run:` steps (all but pip install), in a clone of an origin that serves the pull request
    as GitHub does (refs/pull/N/head), with the event's values substituted for ${{ ... }}."""
    flow = yaml.safe_load((world / "board" / WORKFLOW_PATH).read_text())
    assert list(flow[True]) == ["pull_request_target"] and flow["permissions"] == {"contents": "read"}
    steps = flow["jobs"]["check-pr"]["steps"]
    origin = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(world / "board"), str(origin))
    tree = branch(world, "via-workflow")
    add_bob(world, tree)
    commit(tree, "bob via the workflow")
    git(tree, "push", "-q", str(origin), "via-workflow:refs/pull/7/head")
    base = git(world / "board", "rev-parse", "main")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    event = {"github.event.pull_request.number": "7", "github.event.pull_request.base.sha": base}
    ran = []
    for step in steps:
        if "run" not in step or "pip install" in step["run"]:
            continue
        env = {k: event[v.strip("${} ")] for k, v in (step.get("env") or {}).items()}
        bin_dir = Path(sys.executable).parent  # the venv's `vignette`
        done = subprocess.run(
            ["bash", "-ec", step["run"]],
            cwd=clone,
            env={**os.environ, **GIT_ENV, **env, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, (step["run"], done.stderr)
        ran.append(step["name"])
    assert ran == ["fetch the pull request (objects only)", "check-pr"]
    assert "only adds entries that validate" in done.stdout


# --- item 7: the documented contributor path, end to end --------------------------------------------------------


def test_the_documented_contributor_path_end_to_end(tmp_path, monkeypatch, capsys):
    """docs/leaderboard.md, as written: `build sample` → `run` → `create` (run folder outside the board) → commit on a
    pull request branch → `check-pr` → merge → maintainer `verify --key` → commit the record → `build`; then the
    page in Debian's headless chromium. Writes board.png beside the site."""
    assert cli(["build", "sample", "--out", str(tmp_path / "src"), "--size", "64", "--activities", "cooking"]) == 0
    board = tmp_path / "board"
    assert lb("init", "--out", str(board)) == 0
    capsys.readouterr()
    key = tmp_path / "keys" / "maintainer.pem"  # outside the repository
    assert lb("keygen", "--out", str(key)) == 0
    line = json.loads(capsys.readouterr().out.splitlines()[-1])
    (board / "maintainers.json").write_text(json.dumps({"schema_version": 1, "keys": [{**line, "name": "maint"}]}))
    git(board, "init", "-q", "-b", "main")
    commit(board, "board")
    # the contributor: a run anywhere, an entry made in a pull request's tree
    runs = tmp_path / "elsewhere"
    argv = ["run", "--source", str(tmp_path / "src"), "--config", "identity_contrast", "--model", "random"]
    assert cli([*argv, "--out", str(runs / "mine"), "--no-progress"]) == 0
    pr = tmp_path / "pr"
    git(board, "worktree", "add", "-q", "-b", "carol", str(pr), "main")
    monkeypatch.chdir(pr)
    assert lb("create", str(runs / "mine"), "--by", "carol", "--out", "entries") == 0
    (entry,) = Path("entries").glob("*.json")
    commit(pr, "carol's entry")
    # CI
    monkeypatch.chdir(board)
    src = ("--source", str(tmp_path / "src"))  # the board's official source (default: the published dataset)
    assert lb("check-pr", "--base", "main", "--head", "carol", *src) == 0, capsys.readouterr().err
    # the maintainer merges, verifies with their key and commits the signed record
    git(board, "merge", "-q", "--ff-only", "carol")
    assert lb("verify", f"entries/{entry.name}", "--model", "random", "--limit", "20", "--key", str(key), *src) == 0
    assert Path(f"verifications/{entry.name}").is_file()
    commit(board, "verified carol's entry")
    assert git(board, "status", "--porcelain") == ""
    site = tmp_path / "site"
    assert lb("build", "--entries", "entries", "--out", str(site), *src) == 0
    assert "verified (100% of 20" in (site / "leaderboard.md").read_text()

    webdriver = pytest.importorskip("selenium.webdriver")
    chromium, driver_bin = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver_bin:
        pytest.skip("Debian's chromium and chromium-driver are not installed (make test installs them)")
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,900"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_bin), options=options)
    try:
        driver.get((site / "leaderboard.html").as_uri())
        rows = driver.find_elements(By.CSS_SELECTOR, "#board tbody tr")
        assert len(rows) == 1 and "reference/random-seed0" in rows[0].text and "verified (100% of 20" in rows[0].text
        driver.save_screenshot(str(site / "board.png"))
        assert not [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    finally:
        driver.quit()
    assert (site / "board.png").stat().st_size > 10_000
