"""Human validation: agreement statistics against hand computation, and the annotation page in a real
headless browser (Debian's chromium + chromedriver through selenium): open, answer, reload (autosave),
save, then score two annotators' files."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from vignette_bench.annotate.agreement import agreement_table, cohen_kappa, fleiss_kappa
from vignette_bench.annotate.export import export
from vignette_bench.annotate.score import AnnotationError, load, score
from vignette_bench.dataset_builder.sample import build_sample


def test_cohen_kappa_equals_a_hand_computed_example() -> None:
    # 10 items: both "yes" on 6, both "no" on 2, A yes / B no on 1, A no / B yes on 1.
    a = ["yes"] * 7 + ["no"] * 3
    b = ["yes"] * 6 + ["no", "no", "no", "yes"]
    t = agreement_table(np.array([a, b], dtype=object).T, ["yes", "no"])
    # p_o = 8/10; p_e = 0.7 * 0.7 + 0.3 * 0.3 = 0.58; kappa = (0.8 - 0.58) / 0.42
    assert t["agreement"] == pytest.approx(0.8)
    assert t["kappa"] == pytest.approx(0.22 / 0.42)
    assert t["counts"] == [[7, 7], [3, 3]] and t["joint"] == pytest.approx([0.6, 0.2])
    lo, hi = t["kappa_ci"]
    assert lo < t["kappa"] < hi


def test_fleiss_kappa_equals_a_hand_computed_example_and_cohen_for_perfect_agreement() -> None:
    # 4 items, 3 annotators, categories 0/1: counts per item (3,0), (0,3), (2,1), (1,2)
    codes = np.array([[0, 0, 0], [1, 1, 1], [0, 0, 1], [0, 1, 1]])
    # P_i = 1, 1, 1/3, 1/3 -> mean 2/3; p_j = 6/12, 6/12 -> P_e = 0.5; kappa = (2/3 - 1/2) / (1/2) = 1/3
    assert fleiss_kappa(codes, 2) == pytest.approx(1 / 3)
    assert cohen_kappa(np.array([[0, 0], [1, 1], [1, 1]]), 2) == pytest.approx(1.0)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sample(
        tmp_path_factory.mktemp("ann") / "src",
        size=64,
        identities=("muslim", "hindu", "christian", "old", "young"),
        activities=("cooking",),
    )


def _browser(download_dir: Path):
    webdriver = pytest.importorskip("selenium.webdriver")
    chromium, driver_bin = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver_bin:
        pytest.skip("Debian's chromium and chromium-driver are not installed (make test installs them)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(arg)
    options.add_experimental_option(
        "prefs", {"download.default_directory": str(download_dir), "download.prompt_for_download": False}
    )
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_bin), options=options)
    driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(download_dir)})
    return driver


def _answer(driver, page: Path, annotator: str, answers: dict[str, dict[str, object]], downloads: Path) -> Path:
    from selenium.webdriver.common.by import By

    # a fresh start: the previous annotator's autosave is gone (the clear, like any storage write, reaches
    # Chromium's storage process asynchronously, so reload until the page restores nothing)
    driver.get(page.as_uri())
    for _ in range(40):
        driver.execute_script("localStorage.clear()")
        driver.get(page.as_uri())
        left = "return document.querySelectorAll('input:checked').length + document.getElementById('annotator').value"
        if driver.execute_script(left) in (0, "0"):
            break
        time.sleep(0.25)
    driver.find_element(By.ID, "annotator").send_keys(annotator)
    for item, crit in answers.items():
        for name, value in crit.items():
            for v in value if isinstance(value, list) else [value]:
                driver.find_element(By.CSS_SELECTOR, f'input[name="{item}::{name}"][value="{v}"]').click()
    # autosave: the page opened again keeps the answers. Chromium commits localStorage writes to its
    # storage process asynchronously (later under load), and a reload can drop a commit still pending in
    # the page it replaces: so the answering tab stays open and the page is opened again in a new tab,
    # until the storage has the answers.
    expected = sorted(
        f"{item}::{name}={v}"
        for item, crit in answers.items()
        for name, value in crit.items()
        for v in (value if isinstance(value, list) else [value])
    )
    restored = (
        "return [document.getElementById('annotator').value, [...document.querySelectorAll('input:checked')]"
        ".map(i => i.name + '=' + i.value).sort()]"
    )
    writer = driver.current_window_handle
    for _ in range(80):
        driver.switch_to.new_window("tab")
        driver.get(page.as_uri())
        if driver.execute_script(restored) == [annotator, expected]:  # this annotator's answers, all of them
            break
        driver.close()
        driver.switch_to.window(writer)
        time.sleep(0.25)
    assert driver.execute_script(restored) == [annotator, expected]
    assert driver.find_element(By.ID, "annotator").get_attribute("value") == annotator
    assert driver.find_element(By.ID, "progress").text.startswith(f"{len(answers)} of ")
    driver.find_element(By.ID, "save").click()
    deadline = time.time() + 20
    while time.time() < deadline:
        done = [p for p in downloads.glob(f"annotations-{annotator}-*.json")]
        if done and done[0].stat().st_size > 0:
            return done[0]
        time.sleep(0.1)
    raise AssertionError(f"no saved file for {annotator} in {downloads}: {list(downloads.iterdir())}")


def test_render_page_in_a_real_browser_then_scored(source: Path, tmp_path: Path) -> None:
    page = export(str(source), "renders", tmp_path / "export", n=8, seed=1)
    manifest = json.loads((tmp_path / "export" / "items.json").read_text())
    items = manifest["items"]
    assert len(items) == 8 and all(i["keys"] == [i["id"]] for i in items)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    driver = _browser(downloads)
    try:
        identity_a = ["yes"] * 8
        identity_b = ["yes"] * 6 + ["no", "yes"]
        files = []
        for who, ident in (("ann-a", identity_a), ("ann-b", identity_b)):
            answers: dict[str, dict[str, object]] = {}
            for k, item in enumerate(items):
                crit: dict[str, object] = {
                    "identity": ident[k],
                    "ambiguity": "no",
                    "cues": ["clothing"] if k % 2 or who == "ann-a" else ["clothing", "background"],
                }
                if item["activity"]:
                    crit["activity"] = "yes"
                answers[item["id"]] = crit
            files.append(_answer(driver, page, who, answers, downloads))
        severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert not severe, severe
    finally:
        driver.quit()
    saved = json.loads(files[0].read_text())
    assert saved["annotator"] == "ann-a" and saved["export_id"] == manifest["export_id"] and len(saved["answers"]) == 8
    md = score(tmp_path / "export" / "items.json", files, tmp_path / "agreement").read_text()
    import pandas as pd

    table = pd.read_csv(tmp_path / "agreement" / "agreement.csv")
    ident = table[table["criterion"] == "identity"].set_index("response")
    assert ident.loc["yes", "ann-a count"] == 8 and ident.loc["yes", "ann-b count"] == 7
    assert ident.loc["yes", "agreement (%)"] == pytest.approx(87.5)  # 7 of 8
    # every label of A is "yes": p_e = 1 * 7/8, p_o = 7/8 -> kappa 0 (no agreement beyond chance)
    assert float(ident.loc["yes", "kappa"]) == pytest.approx(0.0)
    background = table[(table["criterion"] == "cues") & (table["response"] == "background")].iloc[0]
    assert background["agreement (%)"] == pytest.approx(50.0)  # B ticked it on the 4 even items only
    assert "Generation quality (paper, table 9)" in md and "Cohen's" in md


def test_pair_page_and_score_in_the_papers_table_10_layout(source: Path, tmp_path: Path) -> None:
    page = export(str(source), "pairs", tmp_path / "export", n=6, seed=0)
    items = json.loads((tmp_path / "export" / "items.json").read_text())["items"]
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    driver = _browser(downloads)
    try:
        files = []
        for who, flip in (("a", -1), ("b", 0)):
            answers = {
                i["id"]: {"match": "left" if k != flip else "right", "distinguishable": "no" if k == flip else "yes"}
                for k, i in enumerate(items)
            }
            files.append(_answer(driver, page, who, answers, downloads))
    finally:
        driver.quit()
    score(tmp_path / "export" / "items.json", files, tmp_path / "out")
    import pandas as pd

    table = pd.read_csv(tmp_path / "out" / "agreement.csv").set_index("dimension")
    overall = table.loc["Overall"]
    assert overall["pairs"] == 6 and overall["distinguishable"] == 5 and overall["non-distinguishable"] == 1
    assert overall["agreement (%)"] == pytest.approx(round(100 * 5 / 6, 1))
    matching = pd.read_csv(tmp_path / "out" / "matching.csv").set_index("annotator")
    assert matching.loc["a", "matched the label to the right person (%)"] == 100.0
    assert matching.loc["b", "matched the label to the right person (%)"] == pytest.approx(round(100 * 5 / 6, 1))


def test_bad_answer_files_are_named(tmp_path: Path, source: Path) -> None:
    export(str(source), "renders", tmp_path / "e", n=3, seed=0)
    items = tmp_path / "e" / "items.json"
    eid = json.loads(items.read_text())["export_id"]
    good = {"format": "vignette-annotations/1", "export_id": eid, "kind": "renders", "annotator": "x", "answers": {}}
    paths = []
    for name, body in (
        ("a.json", good),
        ("b.json", {**good, "annotator": "x"}),
        ("c.json", {**good, "export_id": "other"}),
    ):
        (tmp_path / name).write_text(json.dumps(body))
        paths.append(tmp_path / name)
    (tmp_path / "d.json").write_text("{not json")
    with pytest.raises(AnnotationError, match="b.json: annotator 'x' also in"):
        load(items, paths[:2])
    with pytest.raises(AnnotationError, match="c.json: answers are for export 'other'"):
        load(items, [paths[0], paths[2]])
    with pytest.raises(AnnotationError, match="d.json: not JSON"):
        load(items, [paths[0], tmp_path / "d.json"])
    with pytest.raises(AnnotationError, match="at least two"):
        load(items, paths[:1])


def test_answers_outside_the_options_or_of_the_wrong_type_are_named(tmp_path: Path, source: Path, capsys) -> None:
    from vignette_bench.cli import main as vignette

    export(str(source), "renders", tmp_path / "e", n=3, seed=0)
    items = tmp_path / "e" / "items.json"
    manifest = json.loads(items.read_text())
    first = manifest["items"][0]["id"]
    base = {"format": "vignette-annotations/1", "export_id": manifest["export_id"], "kind": "renders"}
    good = {**base, "annotator": "a", "answers": {first: {"identity": "yes", "cues": ["clothing"]}}}
    (tmp_path / "a.json").write_text(json.dumps(good))
    for bad, named in (
        ({first: {"identity": "maybe"}}, "identity = 'maybe', expected one of ['yes', 'no']"),
        ({first: {"identity": 1}}, "identity = 1"),
        ({first: {"cues": "clothing"}}, "cues = 'clothing', expected a list"),
        ({first: {"cues": ["x-ray vision"]}}, "cues = ['x-ray vision']"),
        ({first: ["yes"]}, "answers must be an object"),
        ({first: {"colour": "red"}}, "unknown criterion 'colour'"),
    ):
        (tmp_path / "b.json").write_text(json.dumps({**base, "annotator": "b", "answers": bad}))
        with pytest.raises(AnnotationError, match=re.escape(f"item {first!r}: {named}")):
            load(items, [tmp_path / "a.json", tmp_path / "b.json"])
        assert (
            vignette(
                [
                    "annotate",
                    "score",
                    str(tmp_path / "a.json"),
                    str(tmp_path / "b.json"),
                    "--items",
                    str(items),
                    "--out",
                    str(tmp_path / "out"),
                ]
            )
            == 2
        )
        assert "b.json" in capsys.readouterr().err


def test_annotator_ids_are_stripped_and_casefolded(tmp_path: Path, source: Path, capsys) -> None:
    export(str(source), "renders", tmp_path / "e", n=3, seed=0)
    items = tmp_path / "e" / "items.json"
    eid = json.loads(items.read_text())["export_id"]
    base = {"format": "vignette-annotations/1", "export_id": eid, "kind": "renders", "answers": {}}
    (tmp_path / "a.json").write_text(json.dumps({**base, "annotator": "Alice "}))
    (tmp_path / "b.json").write_text(json.dumps({**base, "annotator": "alice"}))
    with pytest.raises(AnnotationError, match="b.json: annotator 'alice' also in"):
        load(items, [tmp_path / "a.json", tmp_path / "b.json"])
    assert "'Alice ' read as 'alice'" in capsys.readouterr().err
