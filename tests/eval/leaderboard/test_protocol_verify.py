"""The leaderboard cannot be gamed: one protocol plan, complete answers, re-asked spot checks, safe on
untrusted files, honest ranks. Every tampering case of the issue is a case here, on real runner runs
over the placeholder sample source with the random responder (deterministic per question id)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from vignette_bench.cli import main as cli
from vignette_bench.dataset_builder.sample import build_sample
from vignette_bench.eval.leaderboard import board as board_module
from vignette_bench.eval.leaderboard import entry as _entry
from vignette_bench.eval.leaderboard import verify as _verify
from vignette_bench.eval.leaderboard.board import rank_groups
from vignette_bench.eval.leaderboard.entry import EntryError, create, write_entry
from vignette_bench.eval.leaderboard.official import Official
from vignette_bench.eval.leaderboard.protocol import CUSTOM, VERSION
from vignette_bench.eval.leaderboard.signing import generate_key, public_key_text
from vignette_bench.eval.leaderboard.verify import load_verification, subset, verification_path
from vignette_bench.formats.responses import outcome

# The tree's source/ is the board's official source here (a board's maintainer names it: --source); set by `tree`.
OFFICIAL: list[Official] = []
SOURCE_COMMANDS = ("validate", "build", "verify")


def lb(argv):
    """`vignette leaderboard ARGV` in-process, with the tree's official source."""
    extra = ["--source", OFFICIAL[0].source] if argv and argv[0] in SOURCE_COMMANDS else []
    return cli(["leaderboard", *argv, *extra])


def validate(path):
    return _entry.validate(path, OFFICIAL[0])


def collect(entries, keys=None):
    return board_module.collect(entries, keys, OFFICIAL[0])


def verify(path, spec, n=50, adapter=None, seed=None):
    return _verify.verify(path, spec, n=n, adapter=adapter, official=OFFICIAL[0], seed=seed)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A pull request's tree: source/, runs/<name>/ and entries/<name>.json, one honest protocol run."""
    root = tmp_path_factory.mktemp("lb")
    build_sample(
        root / "source",
        size=64,
        identities=("muslim", "hindu", "christian", "old", "young"),
        activities=("cooking", "driving"),
    )
    OFFICIAL[:] = [Official(str(root / "source"))]
    _run(root, "honest")
    _enter(root, "honest")
    _list_key(root, "maintainer", generate_key(root.parent / f"{root.name}-maintainer.pem"))  # kept outside the tree
    return root


def _list_key(root: Path, name: str, key) -> None:
    """Add a key's public half to the board's maintainers.json."""
    path = root / "maintainers.json"
    listed = json.loads(path.read_text())["keys"] if path.is_file() else []
    listed.append({"name": name, "public_key": public_key_text(key.public_key())})
    path.write_text(json.dumps({"schema_version": 1, "keys": listed}))


def _key(tree: Path) -> Path:
    return tree.parent / f"{tree.name}-maintainer.pem"


def _run(root: Path, name: str, *extra: str) -> Path:
    out = root / "runs" / name
    args = [
        "run",
        "--source",
        OFFICIAL[0].source,  # the board's official source (copies of the tree share it)
        "--config",
        "identity_contrast",
        "--model",
        "random",
        "--out",
        str(out),
    ]
    assert cli([*args, "--no-progress", *extra]) == 0
    return out


def _enter(root: Path, name: str) -> Path:
    path = root / "entries" / f"{name}.json"
    write_entry(create(root / "runs" / name, by="tester", entry_path=path, date="2026-11-01T00:00:00+00:00"), path)
    return path


def _copy(tree: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "tree"
    shutil.copytree(tree, dst)
    return dst


def test_an_honest_protocol_run_is_a_protocol_entry_checked_against_the_source(tree: Path) -> None:
    v = validate(tree / "entries" / "honest.json")
    assert v.protocol == VERSION and v.entry["protocol"] == {"version": VERSION, "differences": []}
    assert v.dataset_checked and v.entry["dataset"]["placeholder"] is True and v.modalities == ("image",)


def test_a_cherry_picked_subset_is_not_the_protocol(tree: Path, tmp_path: Path) -> None:
    root = _copy(tree, tmp_path)
    parquet = root / "runs" / "honest" / "responses.parquet"
    frame = pd.read_parquet(parquet)
    frame[frame["paradigm"] != "factuality"].to_parquet(parquet)  # keep only what flatters the model
    path = _enter(root, "honest")  # the numbers are recomputed, so they are consistent with the subset
    with pytest.raises(
        EntryError, match=r"responses.question_id: vignette-protocol/1 asks \d+ questions; \d+ of them have no answer"
    ):
        validate(path)


def test_another_seed_is_custom_and_cannot_claim_the_protocol(tree: Path, tmp_path: Path) -> None:
    root = _copy(tree, tmp_path)
    _run(root, "seed3", "--seed", "3")
    path = _enter(root, "seed3")
    entry = json.loads(path.read_text())
    assert entry["protocol"]["version"] == CUSTOM and entry["protocol"]["differences"] == ["seed 3 (protocol: 0)"]
    assert validate(path).protocol == CUSTOM
    entry["protocol"] = {"version": VERSION, "differences": []}
    path.write_text(json.dumps(entry))
    with pytest.raises(EntryError, match=r"run: claims vignette-protocol/1 but differs: seed 3 \(protocol: 0\)"):
        validate(path)


def test_a_text_only_run_is_custom_and_shown_as_text(tree: Path, tmp_path: Path) -> None:
    root = _copy(tree, tmp_path)
    _run(root, "text", "--variants", "modality=text")
    v = validate(_enter(root, "text"))
    assert v.protocol == CUSTOM and v.modalities == ("text",)
    assert any("variants" in d for d in v.entry["protocol"]["differences"])


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (("dataset", "placeholder"), False, r"dataset.placeholder: entry says False, the source's index says True"),
        (
            ("dataset", "revision"),
            "0" * 64,
            r"dataset.revision: differs from the sha256 of the source's renders/index.parquet",
        ),
        (("responses", "location"), "/dev/zero", r"responses.location: an absolute path is not accepted"),
        (("responses", "location"), "../../../../etc/hostname", r"responses.location: .* points outside"),
        (("responses", "location"), "https://example.org/r.parquet", r"only hf:// URLs or paths inside"),
    ],
)
def test_tampered_entries_are_rejected_with_a_named_reason(tree: Path, tmp_path: Path, field, value, message) -> None:
    root = _copy(tree, tmp_path)
    path = root / "entries" / "honest.json"
    entry = json.loads(path.read_text())
    entry[field[0]][field[1]] = value
    path.write_text(json.dumps(entry))
    with pytest.raises(EntryError, match=message) as err:
        validate(path)
    assert "hostname" not in str(err.value) or "points outside" in str(err.value)


def test_a_consistently_renamed_model_passes_validate_but_not_a_check_with_another_model(
    tree: Path, tmp_path: Path
) -> None:
    root = _copy(tree, tmp_path)
    parquet = root / "runs" / "honest" / "responses.parquet"
    frame = pd.read_parquet(parquet)
    frame["model_id"] = "org/great-model"
    frame.to_parquet(parquet)
    record = json.loads((root / "runs" / "honest" / "run.json").read_text())
    record["model"]["model_id"] = "org/great-model"
    (root / "runs" / "honest" / "run.json").write_text(json.dumps(record))
    path = _enter(root, "honest")
    assert validate(path).entry["model"]["id"] == "org/great-model"  # nothing in the file can tell
    # re-asking another model than the entry names proves nothing: verify refuses, naming both
    with pytest.raises(
        EntryError, match=r"'reference/random-seed1' at revision 'unknown'; the entry names 'org/great-model'"
    ):
        verify(path, "random:seed=1", n=40)


def test_verify_passes_an_honest_entry_and_fails_fabricated_answers(tree: Path, tmp_path: Path) -> None:
    root = _copy(tree, tmp_path)
    honest = verify(root / "entries" / "honest.json", "random", n=40)
    assert honest.passed and honest.n_checked == 40 and honest.agreement == 1.0 and honest.mode == "greedy"
    # fabricated: 30% of the answers turned to the other option, numbers recomputed so validate accepts them
    parquet = root / "runs" / "honest" / "responses.parquet"
    frame = pd.read_parquet(parquet)
    flip = frame.index[(frame.index % 10 < 3) & frame["valid"]]
    for i in flip:
        options = list(frame.at[i, "options"])
        other = options[(options.index(frame.at[i, "choice"]) + 1) % len(options)]
        frame.at[i, "choice"] = other
        for column, value in outcome(frame.loc[i].to_dict()).items():  # consistent, as the reader requires
            frame.at[i, column] = value
    frame.to_parquet(parquet)
    path = _enter(root, "honest")
    assert validate(path).protocol == VERSION
    fake = verify(path, "random", n=40)
    # The subset follows a seed drawn when verify ran (recorded), so count the flips it drew rather than expect a
    # share: the random responder re-asked gives every unflipped answer back and no flipped one.
    drawn = subset(frame["question_id"], 40, fake.subset_seed)
    n_flipped = int(frame.loc[flip, "question_id"].isin(drawn).sum())
    assert n_flipped > 0  # P(no flip among 40 of a 30% share) < 1e-6
    assert not fake.passed and fake.n_agreed == 40 - n_flipped and len(fake.mismatches) == min(n_flipped, 10)
    assert {m.question_id for m in fake.mismatches} <= set(frame.loc[flip, "question_id"])


def test_the_verification_binds_to_the_entry(tree: Path, tmp_path: Path) -> None:
    root = _copy(tree, tmp_path)
    path = root / "entries" / "honest.json"
    assert lb(["verify", str(path), "--model", "random", "--limit", "20", "--key", str(_key(tree))]) == 0
    record = json.loads(verification_path(path, json.loads(path.read_text())["entry_id"]).read_text())
    assert record["passed"] and record["n_checked"] == 20 and "python" in record["hardware"]
    assert record["endpoint"] == "local" and isinstance(record["subset_seed"], int)
    assert load_verification(path, json.loads(path.read_text())) is not None
    moved = json.loads(path.read_text())
    moved["responses"]["location"] = "hf://datasets/org/results/runs/x/responses.parquet"
    assert load_verification(path, moved) is not None  # publishing the responses elsewhere keeps it
    path.write_text(path.read_text().replace('"tester"', '"someone else"'))  # any other edit voids it
    assert load_verification(path, json.loads(path.read_text())) is None


def test_untrusted_responses_files_are_checked_for_columns_and_types(tree: Path, tmp_path: Path) -> None:
    root = _copy(tree, tmp_path)
    parquet = root / "runs" / "honest" / "responses.parquet"
    frame = pd.read_parquet(parquet)
    frame.drop(columns=["paradigm"]).to_parquet(parquet)
    entry = json.loads((root / "entries" / "honest.json").read_text())
    import hashlib

    entry["responses"]["sha256"] = hashlib.sha256(parquet.read_bytes()).hexdigest()
    (root / "entries" / "honest.json").write_text(json.dumps(entry))
    with pytest.raises(EntryError, match=r"responses.paradigm: column missing"):
        validate(root / "entries" / "honest.json")
    frame.assign(valid=frame["valid"].astype(str)).to_parquet(parquet)
    entry["responses"]["sha256"] = hashlib.sha256(parquet.read_bytes()).hexdigest()
    (root / "entries" / "honest.json").write_text(json.dumps(entry))
    with pytest.raises(EntryError, match=r"responses.valid: column has type (large_)?string, expected bool"):
        validate(root / "entries" / "honest.json")


def test_build_lists_duplicates_and_bad_files_without_failing_the_others(tree: Path, tmp_path: Path) -> None:
    root = _copy(tree, tmp_path)
    shutil.copy(root / "entries" / "honest.json", root / "entries" / "zz-copy.json")
    (root / "entries" / "broken.json").write_text("{not json")
    accepted, rejected = collect(root / "entries")
    assert [a.path.name for a in accepted] == ["honest.json"]
    reasons = dict((p.name, r) for p, r in rejected)
    assert "duplicate entry_id" in reasons["zz-copy.json"] and "honest.json" in reasons["zz-copy.json"]
    assert "not valid JSON" in reasons["broken.json"]
    out = tmp_path / "site"
    assert lb(["build", "--entries", str(root / "entries"), "--out", str(out)]) == 1  # a rejection fails the build
    assert lb(["build", "--entries", str(root / "entries"), "--out", str(out), "--strict"]) == 1  # as it always did
    page = (out / "leaderboard.html").read_text()
    assert "Rejected entries" in page and "zz-copy.json" in page
    assert (out / "space" / "README.md").read_text().startswith("---\ntitle: VIGNETTE leaderboard")


def test_rank_groups_share_a_rank_when_intervals_overlap() -> None:
    # A [1, 3], B [2, 5] overlap: both rank 1; C [6, 8] lies above both: rank 3; D unknown
    assert rank_groups([1.0, 2.0, 6.0, None], [3.0, 5.0, 8.0, None]) == [1, 1, 3, None]


def test_verify_with_tiny_vlms_in_score_mode(tree: Path, tmp_path: Path) -> None:
    """A custom run of a tiny untrained LLaVA-NeXT in score mode: re-asked with the same model the choices and
    probabilities agree; re-asked by a responder that gives no probabilities, score mode cannot verify.
    (Another untrained tiny VLM is no negative: near-uniform probabilities agree within 0.02 by chance.)"""
    root = _copy(tree, tmp_path)
    spec = "tiny:llava_next?mode=score"
    _run_args = ["--sample", "2", "--batch-size", "8"]
    out = root / "runs" / "tiny"
    args = [
        "run",
        "--source",
        OFFICIAL[0].source,
        "--config",
        "identity_contrast",
        "--model",
        spec,
        "--out",
        str(out),
    ]
    assert cli([*args, "--no-progress", *_run_args]) == 0
    path = _enter(root, "tiny")
    same = verify(path, spec, n=12)
    assert same.passed and same.mode == "score" and same.agreement == 1.0 and same.max_prob_diff < 1e-4
    from vignette_bench.eval.adapters.reference import RandomResponder

    class Impostor(RandomResponder):  # says it is the entry's model, answers without probabilities
        def provenance(self):
            return {"model_id": same.model_id, "model_revision": same.model_revision}

    other = verify(path, "random", n=12, adapter=Impostor())
    assert not other.passed and other.mode == "score" and other.n_agreed == 0


def test_the_board_page_in_a_real_browser(tree: Path, tmp_path: Path) -> None:
    """Debian's chromium (headless, chromedriver + selenium): the page loads from disk with no network,
    sorts on a header click, filters on typing, and logs no console errors. Writes a screenshot."""
    webdriver = pytest.importorskip("selenium.webdriver")
    chromium, driver_bin = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver_bin:
        pytest.skip("Debian's chromium and chromium-driver are not installed (make test installs them)")
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    root = _copy(tree, tmp_path)
    _run(root, "seed3", "--seed", "3")
    _enter(root, "seed3")
    honest = str(root / "entries" / "honest.json")
    assert lb(["verify", honest, "--model", "random", "--limit", "10", "--key", str(_key(tree))]) == 0
    out = tmp_path / "site"
    assert lb(["build", "--entries", str(root / "entries"), "--out", str(out)]) == 0
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,900"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_bin), options=options)
    try:
        driver.get((out / "leaderboard.html").as_uri())
        rows = lambda: [r for r in driver.find_elements(By.CSS_SELECTOR, "#board tbody tr") if r.is_displayed()]  # noqa: E731
        assert len(rows()) == 2
        assert any("verified" in r.text for r in rows()) and any("custom" in r.text for r in rows())
        headers = driver.find_elements(By.CSS_SELECTOR, "#board thead th")
        seed_col = [h.text for h in headers].index("protocol")
        headers[seed_col].click()
        first = [r.find_elements(By.TAG_NAME, "td")[seed_col].text for r in rows()]
        headers[seed_col].click()
        second = [r.find_elements(By.TAG_NAME, "td")[seed_col].text for r in rows()]
        assert first == sorted(first) and second == sorted(second, reverse=True) and first != second
        driver.find_element(By.ID, "filter").send_keys("custom")
        assert len(rows()) == 1 and "custom" in rows()[0].text
        assert driver.find_element(By.ID, "shown").text == "1 of 2 entries shown"
        assert driver.find_elements(By.CSS_SELECTOR, "svg circle")
        driver.find_element(By.ID, "filter").clear()
        driver.find_element(By.ID, "filter").send_keys(" ")
        driver.save_screenshot(str(tmp_path / "board.png"))
        severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert not severe, severe
    finally:
        driver.quit()
    assert (tmp_path / "board.png").stat().st_size > 10_000


# --- score-mode agreement: rounding noise and near-ties are not fabrication --------------------------------


def test_score_agreement_forgives_rounding_and_recorded_near_ties_only() -> None:
    from vignette_bench.eval.leaderboard.verify import score_agreement

    opts = ["A", "B", "C"]
    assert score_agreement(opts, "A", "A", [0.6, 0.3, 0.1], [0.6, 0.3, 0.1], 0.02) == (True, 0.0, False)
    ok, d, tie = score_agreement(opts, "A", "A", [0.6, 0.3, 0.1], [0.57, 0.33, 0.1], 0.02)
    assert not ok and d == pytest.approx(0.03) and not tie  # beyond the tolerance
    # bf16 rounding flips a recorded near-tie: agreement, counted as a tie
    assert score_agreement(opts, "B", "A", [0.49, 0.5, 0.01], [0.5, 0.49, 0.01], 0.02)[::2] == (True, True)
    # a recorded choice its own probabilities contradict (fabricated) is no tie, even with equal probabilities
    assert score_agreement(opts, "A", "B", [0.1, 0.8, 0.1], [0.1, 0.8, 0.1], 0.02) == (False, 0.0, False)
    assert score_agreement(opts, "A", "A", None, [0.6, 0.3, 0.1], 0.02)[0] is False  # no probabilities recorded


def test_half_precision_on_either_side_widens_the_tolerance() -> None:
    from types import SimpleNamespace

    from vignette_bench.eval.leaderboard.verify import PROB_TOL, PROB_TOL_HALF, prob_tolerance

    fp32 = SimpleNamespace(model=SimpleNamespace(dtype="torch.float32"))
    bf16 = SimpleNamespace(model=SimpleNamespace(dtype="torch.bfloat16"))
    assert prob_tolerance({"dtype": "torch.float32"}, fp32) == PROB_TOL
    assert prob_tolerance({"dtype": "torch.bfloat16"}, fp32) == PROB_TOL_HALF
    assert prob_tolerance({"dtype": "torch.float32"}, bf16) == PROB_TOL_HALF
    assert prob_tolerance({}, object()) == PROB_TOL  # a reference responder: no dtype


# --- verification that cannot be written by hand: signed by a listed maintainer key --------------------------


def _signed_tree(tree: Path, tmp_path: Path, *extra: str) -> tuple[Path, Path, Path]:
    """A copy of the tree whose honest entry a maintainer verified (`verify --key`): (root, entry, record)."""
    root = _copy(tree, tmp_path)
    path = root / "entries" / "honest.json"
    assert lb(["verify", str(path), "--model", "random", "--limit", "20", "--key", str(_key(tree)), *extra]) == 0
    return root, path, verification_path(path, json.loads(path.read_text())["entry_id"])


def _board(root: Path, capsys) -> tuple[str, str]:
    """(the honest entry's status on the board, the build's log)."""
    capsys.readouterr()
    assert lb(["build", "--entries", str(root / "entries"), "--out", str(root / "site")]) == 0
    log = capsys.readouterr().err
    (accepted,), _ = collect(root / "entries")
    from vignette_bench.eval.leaderboard.board import board_rows

    return board_rows([accepted])["status"].iloc[0], log


def test_a_signed_verification_shows_verified_with_the_spec_used(tree: Path, tmp_path: Path, capsys) -> None:
    root, path, record_path = _signed_tree(tree, tmp_path)
    record = json.loads(record_path.read_text())
    assert record["schema_version"] == 3 and record["signature"] and len(record["signed_by"]) == 16
    assert record["model_id"] == "reference/random-seed0" and record["model_revision"] == "unknown"
    status, log = _board(root, capsys)
    assert status.startswith("verified (100% of 20, ") and "re-asked with random" in status
    assert "self-reported" not in log
    md = (root / "site" / "leaderboard.md").read_text()
    assert "verified (100% of 20" in md and "re-asked with random" in md


def _hand_written(record: dict) -> None:
    record.update(signature=None, signed_by=None)


def _copied_from_another_entry(record: dict) -> None:
    record.update(entry_id="someone-else--00000000--cccf36f2", entry_digest="0" * 64)


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (_hand_written, "not signed"),
        (lambda r: r.update(hardware="8x NVIDIA H100 80GB"), "does not match the record: edited after signing"),
        (lambda r: r.update(model_spec="hf:meta-llama/Llama-3.2-11B-Vision"), "edited after signing"),
        (lambda r: r.update(n_checked=50, n_agreed=50), "edited after signing"),
        (lambda r: r.update(signature=r["signature"][:-4] + "AAA="), "edited after signing"),
        (lambda r: r.update(signed_by="0123456789abcdef"), "which maintainers.json does not list"),
    ],
)
def test_a_record_edited_or_written_by_hand_shows_self_reported(tree: Path, tmp_path: Path, capsys, edit, why) -> None:
    root, path, record_path = _signed_tree(tree, tmp_path)
    record = json.loads(record_path.read_text())
    edit(record)
    record_path.write_text(json.dumps(record))
    status, log = _board(root, capsys)
    assert status == "self-reported" and why in log and str(path) in log
    assert load_verification(path, json.loads(path.read_text())) is None


def test_a_record_copied_from_another_entry_shows_self_reported(tree: Path, tmp_path: Path, capsys) -> None:
    """A validly signed record of entry A, copied to entry B's name (digest recomputed from B's entry or not)."""
    from vignette_bench.eval.leaderboard.verify import entry_digest

    root, path, record_path = _signed_tree(tree, tmp_path)
    other = root / "entries" / "honest.json"
    entry = json.loads(other.read_text())
    entry["submitted"]["by"] = "someone else"  # another entry: another digest, same entry_id
    other.write_text(json.dumps(entry))
    status, log = _board(root, capsys)
    assert status == "self-reported" and "made for another entry" in log
    record = json.loads(record_path.read_text())
    record["entry_digest"] = entry_digest(entry)  # anyone can compute the digest: the signature then breaks
    record_path.write_text(json.dumps(record))
    status, log = _board(root, capsys)
    assert status == "self-reported" and "edited after signing" in log


def test_a_record_signed_by_an_unlisted_key_shows_self_reported(tree: Path, tmp_path: Path, capsys) -> None:
    stranger = tmp_path / "stranger.pem"
    generate_key(stranger)
    root = _copy(tree, tmp_path)
    path = root / "entries" / "honest.json"
    assert lb(["verify", str(path), "--model", "random", "--limit", "20", "--key", str(stranger)]) == 0
    status, log = _board(root, capsys)
    assert status == "self-reported" and "which maintainers.json does not list" in log
    (root / "maintainers.json").unlink()  # no board configuration: no key counts
    status, log = _board(root, capsys)
    assert status == "self-reported" and "no maintainers.json" in log


def test_a_failed_verification_edited_to_passed_shows_self_reported(tree: Path, tmp_path: Path, capsys) -> None:
    root = _copy(tree, tmp_path)
    parquet = root / "runs" / "honest" / "responses.parquet"
    frame = pd.read_parquet(parquet)
    valid = frame.index[frame["valid"]]
    for i in valid:  # every valid answer turned to the other option: numbers recomputed, validate accepts
        options = list(frame.at[i, "options"])
        other = options[(options.index(frame.at[i, "choice"]) + 1) % len(options)]
        frame.at[i, "choice"] = other
        for column, value in outcome(frame.loc[i].to_dict()).items():  # consistent, as the reader requires
            frame.at[i, column] = value
    frame.to_parquet(parquet)
    path = _enter(root, "honest")
    assert lb(["verify", str(path), "--model", "random", "--limit", "20", "--key", str(_key(tree))]) == 1
    status, log = _board(root, capsys)
    assert status.startswith("self-reported (verification failed: ") and "the verification failed" in log
    record_path = verification_path(path, json.loads(path.read_text())["entry_id"])
    record = json.loads(record_path.read_text())
    record.update(passed=True, n_agreed=record["n_checked"], agreement=1.0)
    record_path.write_text(json.dumps(record))
    status, log = _board(root, capsys)
    assert status == "self-reported" and "edited after signing" in log


def test_an_unsigned_older_record_reads_but_verifies_nothing(tree: Path, tmp_path: Path, capsys) -> None:
    root, path, record_path = _signed_tree(tree, tmp_path)
    record = json.loads(record_path.read_text())
    for key in ("schema_version", "model_id", "model_revision", "signed_by", "signature"):
        record.pop(key)  # a version-0 record as verify wrote it before signing
    record_path.write_text(json.dumps(record))
    status, log = _board(root, capsys)
    assert status == "self-reported" and "not signed" in log


def test_verify_without_a_key_writes_nothing_and_a_bad_key_is_an_error(tree: Path, tmp_path: Path, capsys) -> None:
    root = _copy(tree, tmp_path)
    path = root / "entries" / "honest.json"
    assert lb(["verify", str(path), "--model", "random", "--limit", "5"]) == 0
    assert "not signed (no --key)" in capsys.readouterr().out
    assert not (root / "verifications").exists()
    bad = tmp_path / "bad.pem"
    bad.write_text("not a key")
    assert lb(["verify", str(path), "--model", "random", "--limit", "5", "--key", str(bad)]) == 2
    assert "error: " in capsys.readouterr().err and not (root / "verifications").exists()


def test_verify_refuses_a_spec_that_is_not_the_entrys_model(tree: Path, tmp_path: Path, capsys) -> None:
    root = _copy(tree, tmp_path)
    path = root / "entries" / "honest.json"
    entry = json.loads(path.read_text())
    entry["model"]["revision"] = "abc123"  # the entry claims a revision the re-asking model is not at
    parquet_rel = entry["responses"]["location"]
    path.write_text(json.dumps(entry))
    assert parquet_rel
    assert lb(["verify", str(path), "--model", "random", "--key", str(_key(tree))]) == 2
    err = capsys.readouterr().err
    assert "error: model: --model 'random' is 'reference/random-seed0' at revision 'unknown'" in err
    assert "the entry names 'reference/random-seed0' at revision 'abc123'" in err
    assert not (root / "verifications").exists()


def test_keygen_writes_a_private_key_once(tmp_path: Path, capsys) -> None:
    import stat

    key = tmp_path / "keys" / "me.pem"
    assert lb(["keygen", "--out", str(key)]) == 0
    out = capsys.readouterr().out
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and key.read_text().startswith("-----BEGIN PRIVATE KEY")
    line = json.loads(out.splitlines()[-1])
    assert set(line) == {"name", "public_key"} and len(line["public_key"]) == 44
    before = key.read_bytes()
    assert lb(["keygen", "--out", str(key)]) == 2
    assert "exists" in capsys.readouterr().err and key.read_bytes() == before


def test_public_spec_leaves_credentials_out() -> None:
    from vignette_bench.eval.leaderboard.verify import public_spec

    assert public_spec("openai:m@http://user:SECRET@host/v1") == "openai:m@http://host/v1"
    assert "SECRET" not in public_spec("openai:m@http://host/v1?api_key=SECRET&x=1")


# --- validate compares every planned question, and the metadata that repeats the run settings ----------------


def test_answers_of_another_seed_claimed_as_the_protocol_are_refused(tree: Path, tmp_path: Path) -> None:
    """Question ids do not depend on the seed; the option order does, and validate compares it."""
    root = _copy(tree, tmp_path)
    _run(root, "seed3", "--seed", "3")
    path = _enter(root, "seed3")
    entry = json.loads(path.read_text())
    entry["protocol"] = {"version": VERSION, "differences": []}
    entry["run"]["seed"] = 0
    entry["sample"]["seed"] = 0
    path.write_text(json.dumps(entry))
    with pytest.raises(EntryError, match=r"plan rebuilt from the run settings and source asks") as err:
        validate(path)
    assert err.value.field in ("responses.options", "responses.option_identities", "responses.candidates")
    entry["protocol"] = {"version": CUSTOM, "differences": []}  # nor as a custom entry of seed 0
    path.write_text(json.dumps(entry))
    with pytest.raises(EntryError, match=r"question\(s\) differ"):
        validate(path)


def test_a_shuffled_option_order_is_refused(tree: Path, tmp_path: Path) -> None:
    root = _copy(tree, tmp_path)
    parquet = root / "runs" / "honest" / "responses.parquet"
    frame = pd.read_parquet(parquet)
    i = frame.index[frame["paradigm"] == "decision"][0]
    frame.at[i, "options"] = list(frame.at[i, "options"])[::-1]
    frame.at[i, "option_identities"] = list(frame.at[i, "option_identities"])[::-1]
    frame.to_parquet(parquet)
    path = _enter(root, "honest")
    with pytest.raises(EntryError, match=rf"question {frame.at[i, 'question_id']!r} has") as err:
        validate(path)
    assert err.value.field == "responses.options"


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda e: e["sample"].__setitem__("seed", 7), "sample.seed"),
        (lambda e: e["sample"]["settings"].__setitem__("sample", 3), "sample.settings"),
        (lambda e: e["adapter"].__setitem__("mode", "score"), "adapter.mode"),
        (lambda e: e["adapter"].__setitem__("variants", {"paraphrase": [1]}), "adapter.variants"),
    ],
)
def test_metadata_edited_by_hand_is_refused(tree: Path, tmp_path: Path, edit, field) -> None:
    root = _copy(tree, tmp_path)
    path = root / "entries" / "honest.json"
    entry = json.loads(path.read_text())
    edit(entry)
    path.write_text(json.dumps(entry))
    with pytest.raises(EntryError) as err:
        validate(path)
    assert err.value.field == field, str(err.value)


@pytest.mark.parametrize(
    ("spec", "named"),
    [
        ("hf:meta-llama/Llama-3.2-11B-Vision-Instruct", "names 'meta-llama/Llama-3.2-11B-Vision-Instruct'"),
        ("vllm:reference/random-seed0@v2", "names 'reference/random-seed0' at revision 'v2'"),
        ("openai:gpt-4o@https://user:SECRET@api.openai.com/v1", "names 'gpt-4o'"),
    ],
)
def test_a_spec_naming_another_model_is_refused_before_anything_is_loaded(tree: Path, spec: str, named: str) -> None:
    """Offline here: a spec that got as far as loading would fail otherwise, so the refusal comes first."""
    with pytest.raises(EntryError, match=rf"{re.escape(named)}; the entry names 'reference/random-seed0'") as err:
        verify(tree / "entries" / "honest.json", spec, n=5)
    assert "SECRET" not in str(err.value)


def test_build_keys_reads_the_trusted_keys_from_outside_the_pull_request(tree: Path, tmp_path: Path, capsys) -> None:
    """A pull request that lists its own key and signs its own record: `--keys` (the base branch's file) wins."""
    root = _copy(tree, tmp_path)
    base = tmp_path / "base-maintainers.json"
    shutil.copy(root / "maintainers.json", base)
    own = tmp_path / "submitter.pem"
    _list_key(root, "submitter", generate_key(own))  # the pull request edits the tree's maintainers.json
    path = root / "entries" / "honest.json"
    assert lb(["verify", str(path), "--model", "random", "--limit", "10", "--key", str(own)]) == 0
    capsys.readouterr()
    out = str(tmp_path / "site")
    assert lb(["build", "--entries", str(root / "entries"), "--out", out, "--keys", str(base)]) == 0
    err = capsys.readouterr().err
    assert "self-reported" in err and "which maintainers.json does not list" in err
    assert "verified (" not in (tmp_path / "site" / "leaderboard.md").read_text()
    assert lb(["build", "--entries", str(root / "entries"), "--out", out, "--keys", str(tmp_path / "nope.json")]) == 2
    assert "error: " in capsys.readouterr().err


def test_without_cryptography_a_signed_record_is_self_reported_not_a_traceback(monkeypatch) -> None:
    import sys

    from vignette_bench.eval.leaderboard import signing
    from vignette_bench.formats.verification import Verification

    record = Verification(
        entry_id="e",
        entry_digest="d" * 64,
        model_spec="random",
        mode="greedy",
        n_checked=1,
        n_agreed=1,
        agreement=1.0,
        max_prob_diff=None,
        prob_tol=None,
        near_tie_flips=0,
        p_value=None,
        passed=True,
        reason="",
        date="2026-11-26T00:00:00+00:00",
        hardware="cpu",
        mismatches=(),
        signed_by="0123456789abcdef",
        signature="AAAA",
    )
    keys = signing.Keys({"0123456789abcdef": ("m", b"\0" * 32)})
    monkeypatch.setitem(sys.modules, "cryptography.exceptions", None)
    assert "install `cryptography`" in (signing.check(record, keys) or "")


def test_validate_refuses_answers_that_contradict_their_options(tree: Path, tmp_path: Path) -> None:
    """Responses swapped in after create, with the entry's sha256 recomputed by hand: the reader's checks refuse them."""
    import hashlib

    root = _copy(tree, tmp_path)
    path = _enter(root, "honest")
    entry = json.loads(path.read_text())
    parquet = root / "runs" / "honest" / "responses.parquet"
    frame = pd.read_parquet(parquet)
    i = frame.index[frame["valid"]][0]
    frame.at[i, "choice"] = "someone not offered"  # selected_identity still names an offered person
    frame.to_parquet(parquet)
    entry["responses"]["sha256"] = hashlib.sha256(parquet.read_bytes()).hexdigest()
    path.write_text(json.dumps(entry))
    with pytest.raises(EntryError, match="choice"):
        validate(path)
