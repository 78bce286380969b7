"""A board a submitter cannot steer (issue 34, items 2-5), each through the real CLI on real runner runs:
verification by a model and a subset the maintainer's side chooses, derived columns recomputed rather than
trusted, degenerate models never ranked above an honest one, and only the official source read and ranked.

The board's official source here is a sample source whose renders are marked real (a placeholder source is
never ranked), named with ``--source`` as a maintainer would."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.eval.leaderboard.degenerate import AlwaysInvalid, AlwaysOneIdentity, AlwaysRefuse
from tests.loader.test_http import serve_folder
from vignette_bench.cli import main as cli
from vignette_bench.dataset_builder.sample import build_sample
from vignette_bench.eval.leaderboard.board import board_rows, collect
from vignette_bench.eval.leaderboard.official import Official
from vignette_bench.eval.leaderboard.protocol import CUSTOM, VERSION, plan_for, protocol_settings, source_pairs
from vignette_bench.eval.leaderboard.signing import generate_key, public_key_text, sign
from vignette_bench.eval.leaderboard.verify import subset, verification_path, verification_status, verify
from vignette_bench.eval.runtime.run import run
from vignette_bench.formats.responses import ResponsesError, outcome, read_responses
from vignette_bench.formats.verification import Verification

DEGENERATE = {
    "muslim": AlwaysOneIdentity("muslim"),
    "refuse": AlwaysRefuse(),
    "invalid": AlwaysInvalid(),
}


def lb(*argv: str) -> int:
    return cli(["leaderboard", *argv])


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """source/ (the official source, renders marked real), runs/ and entries/: an honest random model and four
    degenerate ones (always-left, always one identity, always refusing, always invalid), and a maintainer key."""
    root = tmp_path_factory.mktemp("board")
    src = build_sample(
        root / "source", size=64, identities=("muslim", "hindu", "christian", "old", "young"), activities=("cooking",)
    )
    index = src / "renders" / "index.parquet"
    table = pq.read_table(index)
    column = table.schema.get_field_index("placeholder")
    pq.write_table(table.set_column(column, "placeholder", pa.array([False] * table.num_rows)), index)
    for name, spec in (("honest", "random"), ("left", "always-left")):
        argv = ["run", "--source", str(src), "--config", "identity_contrast", "--model", spec]
        assert cli([*argv, "--out", str(root / "runs" / name), "--no-progress"]) == 0
    plan = plan_for("identity_contrast", source_pairs(str(src), "identity_contrast"))
    for name, adapter in DEGENERATE.items():  # the real runner, with a model that ignores the picture
        settings = protocol_settings(plan, str(src), f"degenerate:{name}")
        run(settings, root / "runs" / name, adapter=adapter, progress=False, max_invalid=1.0)
    for name in ("honest", "left", *DEGENERATE):
        assert lb("create", str(root / "runs" / name), "--by", "tester", "--out", str(root / "entries")) == 0
    key = generate_key(root.parent / f"{root.name}.pem")
    listed = [{"name": "maintainer", "public_key": public_key_text(key.public_key())}]
    (root / "maintainers.json").write_text(json.dumps({"schema_version": 1, "keys": listed}))
    return root


def _entry(root: Path, model: str) -> Path:
    (path,) = [p for p in (root / "entries").glob("*.json") if json.loads(p.read_text())["model"]["id"] == model]
    return path


def _copy(board: Path, tmp_path: Path, *names: str) -> Path:
    """The board with only the named runs' entries (all of them when none is named)."""
    root = tmp_path / "board"
    shutil.copytree(board, root, ignore=shutil.ignore_patterns("site"))
    if names:
        keep = {_entry(root, f"reference/{n}").name for n in names}
        for p in (root / "entries").glob("*.json"):
            if p.name not in keep:
                p.unlink()
    return root


def _official(board: Path) -> str:
    return str(board / "source")


# --- item 4: ranks that mean what they say --------------------------------------------------------------------


def test_degenerate_models_are_never_ranked_above_an_honest_one(board: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    assert lb("build", "--entries", str(board / "entries"), "--out", str(out), "--source", _official(board)) == 0
    accepted, rejected = collect(board / "entries", official=Official(_official(board)))
    assert rejected == []
    t = board_rows(accepted).set_index("model")
    assert t.loc["reference/random-seed0", "rank (decision)"] == 1
    assert t.loc["reference/random-seed0", "unranked because"] == ""
    reasons = {
        "reference/always-left": "pick the left person (position only)",
        "reference/always-muslim": "all decision answers name 'muslim'",
        "reference/always-refuse": "invalid",
        "reference/always-invalid": "all decision answers invalid",
    }
    for model, reason in reasons.items():
        assert t.loc[model, "rank (decision)"] is None, model
        assert reason in t.loc[model, "unranked because"], (model, t.loc[model, "unranked because"])
    md = (out / "leaderboard.md").read_text()
    assert "unranked because" in md and "position only" in md
    page = (out / "leaderboard.html").read_text()
    assert "unranked because" in page and "pick the left person" in page
    rows = [line for line in md.splitlines() if line.startswith("| ")][1:]  # after the header
    assert "random-seed0" in rows[0] and rows[0].startswith("| 1 |")  # ranked first, shown as 1 (not 1.00)
    assert page.index("reference/random-seed0") < min(page.index(f"reference/always-{n}") for n in DEGENERATE)


def test_an_undefined_interval_never_sorts_first(board: Path) -> None:
    """NaN compares false with everything: the ranking must treat it as no rank, not rank 1."""
    from vignette_bench.eval.leaderboard.board import rank_groups

    nan = float("nan")
    assert rank_groups([nan, 1.0, None], [nan, 2.0, 3.0]) == [None, 1, None]


# --- item 2: verification the submitter cannot steer ----------------------------------------------------------


def test_the_subset_is_drawn_at_verify_time_and_grinding_the_entry_changes_nothing(board: Path, tmp_path: Path) -> None:
    root = _copy(board, tmp_path, "random-seed0")
    path = _entry(root, "reference/random-seed0")
    key = str(board.parent / f"{board.name}.pem")
    seeds, subsets = [], []
    for _ in range(2):
        argv = ["verify", str(path), "--model", "random", "--limit", "10", "--key", key, "--source", _official(board)]
        assert lb(*argv) == 0
        entry = json.loads(path.read_text())
        record = Verification.from_json(verification_path(path, entry["entry_id"]).read_bytes(), "record")
        assert record.endpoint == "local" and record.subset_seed is not None
        seeds.append(record.subset_seed)
        frame = pd.read_parquet(root / "runs" / "honest" / "responses.parquet")
        drawn = subset(frame["question_id"], 10, record.subset_seed)  # anyone can redraw it from the record
        assert {m.question_id for m in record.mismatches} <= set(drawn)
        subsets.append(drawn)
    assert seeds[0] != seeds[1] and subsets[0] != subsets[1]  # fresh randomness each time (P(equal) ~ 2^-63)
    # Grinding a free field changes the entry's digest, not the subset: the seed, not the entry, draws it.
    entry = json.loads(path.read_text())
    first = verify(path, "random", n=10, official=Official(_official(board)), seed=seeds[0])
    entry["submitted"]["notes"] = "grind 12345"
    path.write_text(json.dumps(entry))
    ground = verify(path, "random", n=10, official=Official(_official(board)), seed=seeds[0])
    assert first.entry_digest != ground.entry_digest and ground.subset_seed == first.subset_seed == seeds[0]
    frame = pd.read_parquet(root / "runs" / "honest" / "responses.parquet")
    assert subset(frame["question_id"], 10, ground.subset_seed) == subsets[0]


def test_an_endpoint_the_entry_names_is_refused_and_never_asked(board: Path, tmp_path: Path, capsys) -> None:
    """A submitter's server answering as the entry's model: `verify` refuses the spec before any request."""
    root = _copy(board, tmp_path, "random-seed0")
    path = _entry(root, "reference/random-seed0")
    (root / "www").mkdir()
    with serve_folder(root / "www") as (url, traffic):
        spec = f"openai:reference/random-seed0@{url}/v1"
        key = str(board.parent / f"{board.name}.pem")
        capsys.readouterr()
        assert lb("verify", str(path), "--model", spec, "--key", key, "--source", _official(board)) == 2
        assert traffic.requests == []
    err = capsys.readouterr().err
    assert err.startswith("error: --model:") and "not a provider's own endpoint" in err
    assert not (root / "verifications").exists()


def test_a_signed_record_of_an_untrusted_endpoint_or_an_old_subset_is_not_verified(board: Path, tmp_path: Path) -> None:
    """Even signed by a listed maintainer key: a record that re-asked elsewhere, or whose subset followed the
    entry's digest (no subset_seed: an older vignette), never shows "verified"."""
    root = _copy(board, tmp_path, "random-seed0")
    path = _entry(root, "reference/random-seed0")
    entry = json.loads(path.read_text())
    good = verify(path, "random", n=5, official=Official(_official(board)))
    from vignette_bench.eval.leaderboard.signing import load_private_key

    key = load_private_key(board.parent / f"{board.name}.pem")
    target = verification_path(path, entry["entry_id"])
    target.parent.mkdir(parents=True, exist_ok=True)
    for update, why in (
        ({}, None),
        ({"endpoint": "http://127.0.0.1:9/v1"}, "endpoint the board does not trust"),
        ({"subset_seed": None}, "predates verification the submitter cannot steer"),
    ):
        target.write_text(sign(good.model_copy(update=update), key).dumps())
        status = verification_status(path, entry)
        assert status.verified == (why is None) and (why is None or why in str(status.reason)), status


# --- item 3: derive, do not trust ----------------------------------------------------------------------------


def _responses(path: Path) -> Path:
    """The responses file an entry in the board points to (`create` copies them beside the entries)."""
    return (path.parent / json.loads(path.read_text())["responses"]["location"]).resolve()


def _rewrite(path: Path, frame: pd.DataFrame) -> Path:
    """Write the entry's responses and fix its sha256 (what a submitter editing both would do)."""
    parquet = _responses(path)
    frame.to_parquet(parquet)
    entry = json.loads(path.read_text())
    entry["responses"]["sha256"] = hashlib.sha256(parquet.read_bytes()).hexdigest()
    path.write_text(json.dumps(entry))
    return path


def test_dropped_sources_and_fabricated_derived_columns_are_refused(board: Path, tmp_path: Path, capsys) -> None:
    root = _copy(board, tmp_path, "always-left")
    path = _entry(root, "reference/always-left")
    frame = pd.read_parquet(_responses(path))
    # the attack: drop option_identities, then claim a balanced model (alternate sides, spread identities)
    fake = frame.drop(columns=["option_identities"])
    valid = fake["valid"].astype(bool)
    fake.loc[valid, "chose_left"] = [i % 2 == 0 for i in range(int(valid.sum()))]
    fake.loc[valid, "selected_identity"] = [
        r["identity_left"] if i % 2 == 0 else r["identity_right"] for i, (_, r) in enumerate(fake[valid].iterrows())
    ]
    _rewrite(path, fake)
    capsys.readouterr()
    assert lb("validate", str(path), "--source", _official(board)) != 0
    err = capsys.readouterr().err
    assert "responses" in err and "option_identities" in err, err
    # the one responses reader names the file and the column the derived ones follow from
    with pytest.raises(ResponsesError, match=r"column selected_identity: follows from option_identities"):
        read_responses(_responses(path))
    # keep option_identities but rewrite them with the derived columns (all consistent within the file): the plan
    # rebuilt from the official source says what each option stands for
    fake = frame.copy()
    fake["option_identities"] = [list(reversed(list(x))) for x in fake["option_identities"]]
    for i in fake.index[valid]:  # every derived column made to follow from the swapped identities
        for column, value in outcome(fake.loc[i].to_dict()).items():
            fake.at[i, column] = value
    _rewrite(path, fake)
    capsys.readouterr()
    assert lb("validate", str(path), "--source", _official(board)) != 0
    assert "responses.option_identities" in capsys.readouterr().err


def test_a_derived_column_that_disagrees_with_the_plan_is_refused(board: Path, tmp_path: Path, capsys) -> None:
    """A flipped chose_left, the answers themselves unchanged (the always-left model made to look balanced)."""
    root = _copy(board, tmp_path, "always-left")
    path = _entry(root, "reference/always-left")
    frame = pd.read_parquet(_responses(path))
    side = frame["chose_left"].notna()
    fake = frame.copy()
    fake.loc[side, "chose_left"] = ~frame.loc[side, "chose_left"].astype(bool)
    fake.loc[side, "choice"] = frame.loc[side, "choice"]  # the answers themselves unchanged
    _rewrite(path, fake)
    capsys.readouterr()
    assert lb("validate", str(path), "--source", _official(board)) != 0
    assert "chose_left" in capsys.readouterr().err


# --- item 5: only the official source is ranked, and no other is read -----------------------------------------


def test_edited_templates_on_the_official_source_are_custom_and_unranked(
    board: Path, tmp_path: Path, monkeypatch, capsys
) -> None:
    from vignette_bench.eval.runtime import questions

    root = _copy(board, tmp_path, "random-seed0")
    with monkeypatch.context() as m:  # the submitter's copy of vignette asks in other words
        key = "perception/struggle"
        m.setitem(questions.TEMPLATES, key, tuple(f"{t} Hint: the left one." for t in questions.TEMPLATES[key]))
        argv = ["run", "--source", _official(board), "--config", "identity_contrast", "--model", "random:seed=2"]
        assert cli([*argv, "--out", str(root / "runs" / "edited"), "--no-progress"]) == 0
        path = root / "entries" / "edited.json"
        from vignette_bench.eval.leaderboard.entry import create, write_entry

        write_entry(create(root / "runs" / "edited", by="submitter", entry_path=path), path)
    entry = json.loads(path.read_text())
    entry["protocol"] = {"version": VERSION, "differences": []}  # it claims the protocol
    path.write_text(json.dumps(entry))
    official = Official(_official(board))
    accepted, rejected = collect(root / "entries", official=official)
    assert rejected == [] or all("edited" not in p.name for p, _ in rejected)
    rows = board_rows(accepted).set_index("model")
    edited = [a for a in accepted if a.path.name == "edited.json"][0]
    assert edited.validated.protocol == CUSTOM and "template_hash" in "; ".join(edited.validated.custom_because)
    honest = [a for a in accepted if a.path.name != "edited.json"][0]
    assert honest.validated.protocol == VERSION
    assert rows["rank (decision)"].tolist().count(1) == 1  # only the honest one is ranked
    assert board_rows([edited])["rank (decision)"].iloc[0] is None


def test_a_submitters_source_url_is_never_fetched(board: Path, tmp_path: Path, capsys) -> None:
    """An honest run against the submitter's own server: validate and build make no request to it, list the entry
    as custom and unranked; only --read-other-sources (a maintainer's explicit choice) reads it, still unranked."""
    root = _copy(board, tmp_path, "random-seed0")
    with serve_folder(board / "source") as (url, traffic):
        argv = ["run", "--source", url, "--config", "identity_contrast", "--model", "random:seed=4"]
        assert cli([*argv, "--out", str(root / "runs" / "theirs"), "--no-progress"]) == 0
        assert lb("create", str(root / "runs" / "theirs"), "--by", "submitter", "--out", str(root / "entries")) == 0
        path = _entry(root, "reference/random-seed4")
        entry = json.loads(path.read_text())
        assert entry["dataset"]["source"] == url and entry["protocol"]["version"] == VERSION
        traffic.reset()
        capsys.readouterr()
        assert lb("validate", str(path), "--source", _official(board)) == 0
        assert "custom" in capsys.readouterr().out
        out = tmp_path / "site"
        assert lb("build", "--entries", str(root / "entries"), "--out", str(out), "--source", _official(board)) == 0
        assert traffic.requests == []  # not one request to the submitter's server
        md = (out / "leaderboard.md").read_text()
        assert "not the board's official source" in md
        assert lb("validate", str(path), "--source", _official(board), "--read-other-sources") == 0
        assert traffic.requests  # read only when the maintainer asks
        accepted, _ = collect(root / "entries", official=Official(_official(board), read_others=True))
    theirs = [a for a in accepted if a.entry["model"]["id"] == "reference/random-seed4"][0]
    assert theirs.validated.protocol == CUSTOM and theirs.validated.dataset_checked
    assert board_rows([theirs])["rank (decision)"].iloc[0] is None
