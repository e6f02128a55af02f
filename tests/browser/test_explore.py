"""The report explorer in Chromium: real uploads, their findings, and a clear error for a bad file."""

from __future__ import annotations

from pathlib import Path

from conftest import WAIT_S, assert_clean_console, open_page, screenshot, wait_for, wait_idle

DATA = Path(__file__).resolve().parents[1] / "data"
NCU_REP = DATA / "ncu_strided_copy" / "copy_strided_vs_coalesced.ncu-rep"
NSYS_SQLITE = DATA / "nsys_torch_softmax" / "torch_softmax_nvtx.sqlite"


def upload(driver, path: Path) -> None:
    from selenium.webdriver.common.by import By

    driver.find_element(By.CSS_SELECTOR, "#exp-upload input[type=file]").send_keys(str(path))


def wait_text(driver, css: str, *needles: str) -> str:
    """The text of a visible element matching ``css`` once it contains every one of ``needles``.
    The text is read afresh on every poll and returned, not the element: Dash replaces elements when
    a later callback (the timeline's first relayout, the findings once it is drawn) re-renders them,
    and an element kept across that goes stale."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def found(d) -> str | bool:
        for el in d.find_elements(By.CSS_SELECTOR, css):
            if el.is_displayed() and all(n.casefold() in el.text.casefold() for n in needles):
                return el.text
        return False

    wait = WebDriverWait(driver, WAIT_S, poll_frequency=0.1, ignored_exceptions=(StaleElementReferenceException,))
    return wait.until(found, f"no visible {css!r} containing {needles!r}")


def test_upload_ncu_rep_shows_kernels_roofline_and_the_uncoalesced_finding(driver, live_app):
    open_page(driver, live_app, "/explore", "#exp-upload")
    upload(driver, NCU_REP)
    wait_text(driver, "#exp-summary", "copy_strided_vs_coalesced.ncu-rep")
    wait_text(driver, "#exp-kernel-table", "copy_coalesced", "copy_strided")
    wait_for(driver, "#exp-roofline .main-svg")
    wait_text(driver, "#exp-findings .finding.top", "Uncoalesced global loads", "32 sectors per request")
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
    wait_text(driver, "#exp-summary", "torch_softmax_nvtx.sqlite")
    wait_for(driver, "#exp-timeline .main-svg")
    wait_text(driver, "#exp-timeline-note", "events in view")
    wait_text(driver, "#exp-kernel-table", "cunn_SoftMaxForward", "launches")
    wait_text(driver, "#exp-findings .finding.top", "3 copies through pageable memory at 1.56 GB/s")
    wait_idle(driver)
    screenshot(driver, "explore-timeline")
    assert_clean_console(driver)
