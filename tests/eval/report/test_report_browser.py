"""The report page in Debian's chromium (headless, chromedriver + selenium) at 1366×768: the findings are
the first thing on screen, every figure has alt text and loads, the collapsed sections open, nothing is
logged as an error and no machine path is in the DOM. Skips when chromium is not installed.

VIGNETTE_REPORT_SCREENSHOT=docs/report.png saves the first screen there (docs/report.md shows it)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from vignette_bench.eval.report.command import make_report
from vignette_bench.eval.simulate import SimSpec, write_run

WIDTH, HEIGHT = 1366, 768
# 8 activities: with 4, the few-cluster wild bootstrap check (issue 27) leaves a planted 85% without a verdict
DEMO_LIKE = dict(dimensions=("religion", "age"), genders=("female",), n_activities=8, n_traits=4)


def test_report_page_in_a_real_browser(tmp_path: Path) -> None:
    webdriver = pytest.importorskip("selenium.webdriver")
    chromium, driver_bin = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver_bin:
        pytest.skip("Debian's chromium and chromium-driver are not installed (make test installs them)")
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    # demo-like: a model with a planted preference and a null one (random answers), two paradigms each
    runs = tmp_path / "runs"
    planted = write_run(runs / "planted", SimSpec(seed=3, planted=(("muslim", 0.85),), **DEMO_LIKE))
    null = write_run(runs / "null", SimSpec(seed=4, model_id="reference/null", **DEMO_LIKE))
    _, page = make_report([planted, null], tmp_path / "report")

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", f"--window-size={WIDTH},{HEIGHT}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_bin), options=options)
    try:
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False},
        )
        driver.get(page.as_uri())
        assert driver.execute_script("return [innerWidth, innerHeight]") == [WIDTH, HEIGHT]
        # the findings are the first thing on screen, whole, with their verdict and interval
        first = driver.find_elements(By.CSS_SELECTOR, "body > *:not(h1)")[0]
        assert first.get_attribute("class") == "findings"
        top, bottom = driver.execute_script(
            "const r = arguments[0].getBoundingClientRect(); return [r.top, r.bottom]", first
        )
        assert 0 <= top < 80 and bottom <= HEIGHT, (top, bottom)
        assert "muslim" in first.text and "bias +" in first.text and "95% CI" in first.text
        shot = Path(os.environ.get("VIGNETTE_REPORT_SCREENSHOT") or tmp_path / "report.png")
        driver.save_screenshot(str(shot))
        # collapsed at first; a summary click opens a section, a findings link opens its target
        details = driver.find_elements(By.TAG_NAME, "details")
        assert details and not any(d.get_attribute("open") for d in details)
        details[0].find_element(By.TAG_NAME, "summary").click()
        assert details[0].get_attribute("open") is not None
        link = first.find_element(By.LINK_TEXT, "verdict table")
        target = link.get_attribute("href").split("#")[1]
        link.click()
        opened = driver.find_element(By.ID, target)
        assert opened.get_attribute("open") is not None and "Verdict per identity" in opened.text
        # every figure: alt text, and the image decoded (open every section so each is laid out)
        driver.execute_script("document.querySelectorAll('details').forEach(d => d.open = true)")
        images = driver.find_elements(By.TAG_NAME, "img")
        assert len(images) >= 3  # two forest plots and the model comparison
        for img in images:
            assert len(img.get_attribute("alt") or "") > 20
            assert driver.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", img)
        dom = driver.execute_script("return document.documentElement.outerHTML")
        for path in ("/work/", "/tmp/", "/home/", str(tmp_path), str(planted)):
            assert path not in dom, path
        severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert not severe, severe
    finally:
        driver.quit()
    assert shot.stat().st_size > 10_000
