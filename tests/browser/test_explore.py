"""The report explorer in Chromium: real uploads, their findings, and a clear error for a bad file."""

from __future__ import annotations

from pathlib import Path

from conftest import assert_clean_console, open_page, screenshot, wait_for, wait_idle

DATA = Path(__file__).resolve().parents[1] / "data"
NCU_REP = DATA / "ncu_strided_copy" / "copy_strided_vs_coalesced.ncu-rep"
NSYS_SQLITE = DATA / "nsys_torch_softmax" / "torch_softmax_nvtx.sqlite"


def upload(driver, path: Path) -> None:
    from selenium.webdriver.common.by import By

    driver.find_element(By.CSS_SELECTOR, "#exp-upload input[type=file]").send_keys(str(path))


def test_upload_ncu_rep_shows_kernels_roofline_and_the_uncoalesced_finding(driver, live_app):
    open_page(driver, live_app, "/explore", "#exp-upload")
    upload(driver, NCU_REP)
    wait_for(driver, "#exp-summary", "copy_strided_vs_coalesced.ncu-rep")
    table = wait_for(driver, "#exp-kernel-table", "copy_coalesced")
    assert "copy_strided" in table.text
    wait_for(driver, "#exp-roofline .main-svg")
    top = wait_for(driver, "#exp-findings .finding.top", "Uncoalesced global loads")
    assert "32 sectors per request" in top.text
    wait_idle(driver)
    screenshot(driver, "explore-ncu")
    assert_clean_console(driver)


def test_findings_follow_the_chosen_kernel(driver, live_app):
    from selenium.webdriver.common.by import By

    open_page(driver, live_app, "/explore", "#exp-upload")
    upload(driver, NCU_REP)
    wait_for(driver, "#exp-findings .finding.top", "Uncoalesced")
    driver.find_element(By.CSS_SELECTOR, "#exp-kernel-filter").click()
    wait_for(driver, "[role=option]", "1: copy_coalesced").click()
    top = wait_for(driver, "#exp-findings .finding.top", "DRAM at 54%")  # copy_coalesced's dram_throughput_pct 54.3
    assert "Uncoalesced" not in driver.find_element(By.CSS_SELECTOR, "#exp-findings").text
    assert top.is_displayed()
    assert_clean_console(driver)


def test_a_corrupt_file_gives_one_clear_line(driver, live_app, tmp_path):
    bad = tmp_path / "broken.ncu-rep"
    bad.write_bytes(NCU_REP.read_bytes()[:2000])
    open_page(driver, live_app, "/explore", "#exp-upload")
    upload(driver, bad)
    err = wait_for(driver, "#exp-error")
    assert err.text.startswith("broken.ncu-rep: ")
    assert "Traceback" not in err.text and "\n" not in err.text.strip()
    screenshot(driver, "explore-error")
    assert_clean_console(driver)


def test_upload_nsys_sqlite_shows_the_timeline_and_findings(driver, live_app):
    open_page(driver, live_app, "/explore", "#exp-upload")
    upload(driver, NSYS_SQLITE)
    wait_for(driver, "#exp-summary", "torch_softmax_nvtx.sqlite")
    wait_for(driver, "#exp-timeline .main-svg")
    assert "events in view" in wait_for(driver, "#exp-timeline-note").text
    table = wait_for(driver, "#exp-kernel-table", "cunn_SoftMaxForward")
    assert "launches" in table.text
    wait_for(driver, "#exp-findings .finding.top", "3 copies through pageable memory at 1.56 GB/s")
    wait_idle(driver)
    screenshot(driver, "explore-timeline")
    assert_clean_console(driver)
