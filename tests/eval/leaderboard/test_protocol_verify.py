"""The leaderboard cannot be gamed: one protocol plan, complete answers, re-asked spot checks, safe on
untrusted files, honest ranks. Every tampering case of the issue is a case here, on real runner runs
over the placeholder sample source with the random responder (deterministic per question id)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from vignette_bench.cli import main as cli
from vignette_bench.dataset_builder.sample import build_sample
from vignette_bench.eval.leaderboard.board import collect, rank_groups
from vignette_bench.eval.leaderboard.entry import EntryError, create, validate, write_entry
from vignette_bench.eval.leaderboard.protocol import CUSTOM, VERSION
from vignette_bench.eval.leaderboard.verify import load_verification, verification_path, verify
from vignette_bench.formats.responses import outcome


def lb(argv):
    """`vignette leaderboard ARGV` in-process."""
    return cli(["leaderboard", *argv])


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
    _run(root, "honest")
    _enter(root, "honest")
    return root


def _run(root: Path, name: str, *extra: str) -> Path:
    out = root / "runs" / name
    args = [
        "run",
        "--source",
        str(root / "source"),
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
    result = verify(path, "random:seed=1", n=40)  # the named model (here: another responder) answers otherwise
    assert not result.passed and result.agreement < 0.6


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
    assert not fake.passed and 0.5 < fake.agreement < 0.95 and fake.mismatches


def test_the_subset_depends_on_the_entry_and_verification_binds_to_it(tree: Path, tmp_path: Path) -> None:
    root = _copy(tree, tmp_path)
    path = root / "entries" / "honest.json"
    assert lb(["verify", str(path), "--model", "random", "--limit", "20"]) == 0
    record = json.loads(verification_path(path, json.loads(path.read_text())["entry_id"]).read_text())
    assert record["passed"] and record["n_checked"] == 20 and "python" in record["hardware"]
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
    assert lb(["build", "--entries", str(root / "entries"), "--out", str(out)]) == 0
    assert lb(["build", "--entries", str(root / "entries"), "--out", str(out), "--strict"]) == 1
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
        str(root / "source"),
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
    other = verify(path, "random", n=12)
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
    assert lb(["verify", str(root / "entries" / "honest.json"), "--model", "random", "--limit", "10"]) == 0
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
