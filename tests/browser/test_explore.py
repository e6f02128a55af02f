"""The report explorer in Chromium: real uploads, their findings, and a clear error for a bad file;
a report of many launches drawn in seconds, the report kept across reloads, the timeline's lanes
kept in an idle window, search and details, and a comparison with a baseline."""

from __future__ import annotations

from pathlib import Path

import time

from app_support import many_launches_csv
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
    wait_idle(driver)
    driver.find_element(By.CSS_SELECTOR, "#exp-kernel-filter").click()
    wait_for(driver, "[role=option]", "copy_coalesced · 1 launch").click()
    top = wait_for(driver, "#exp-findings .finding.top", "DRAM at 54%")  # copy_coalesced's dram_throughput_pct 54.3
    assert "Uncoalesced" not in driver.find_element(By.CSS_SELECTOR, "#exp-findings").text
    assert top.is_displayed()
    assert_clean_console(driver)


def test_a_corrupt_file_gives_one_clear_line(driver, live_app, tmp_path):
    bad = tmp_path / "broken.ncu-rep"
    bad.write_bytes(NCU_REP.read_bytes()[:2000])
    open_page(driver, live_app, "/explore", "#exp-upload")
    upload(driver, bad)
    err = wait_text(driver, "#exp-error", "broken.ncu-rep: ")
    assert err.startswith("broken.ncu-rep: ")
    assert "Traceback" not in err and "\n" not in err.strip() and "/tmp" not in err
    screenshot(driver, "explore-error")
    assert_clean_console(driver)


def test_upload_nsys_sqlite_shows_the_timeline_and_findings(driver, live_app):
    open_page(driver, live_app, "/explore", "#exp-upload")
    upload(driver, NSYS_SQLITE)
    wait_text(driver, "#exp-summary", "torch_softmax_nvtx.sqlite")
    wait_for(driver, "#exp-timeline .main-svg")
    wait_text(driver, "#exp-timeline-note", "GPU 0 busy 46.8%")
    wait_text(driver, "#exp-kernel-table", "cunn_SoftMaxForward", "launches")
    wait_text(driver, "#exp-findings .finding.top", "3 copies through pageable memory at 1.56 GB/s")
    wait_idle(driver)
    screenshot(driver, "explore-timeline")
    assert_clean_console(driver)


#: The acceptance bound for a 105-launch report on the 2-core development machine (issue 20).
MANY_LAUNCHES_S = 10.0
#: Finding cards a page may hold at most, whatever the report's size.
MAX_CARDS = 40


def test_a_report_of_105_launches_draws_its_findings_grouped_within_seconds(driver, live_app, tmp_path):
    from selenium.webdriver.common.by import By

    report = many_launches_csv(tmp_path / "copy_x105.csv", 105)  # synthetic: the recorded launch 105 times
    open_page(driver, live_app, "/explore", "#exp-upload")
    driver.execute_script("""  // every text the progress line shows, as it changes
        window.__progress = [];
        new MutationObserver(() => window.__progress.push(document.getElementById('exp-progress').innerText))
            .observe(document.getElementById('exp-progress'), {childList: true, subtree: true, characterData: true});""")
    start = time.monotonic()
    upload(driver, report)
    wait_text(driver, "#exp-findings .finding.top", "Uncoalesced global loads", "105 launches")
    elapsed = time.monotonic() - start
    assert elapsed < MANY_LAUNCHES_S, f"findings of 105 launches took {elapsed:.1f} s"
    cards = driver.find_elements(By.CSS_SELECTOR, "#exp-findings .finding")
    assert 0 < len(cards) <= MAX_CARDS and len(cards) == 2  # one per finding, not one per launch
    assert "210 findings in 2 groups on 1 kernel" in wait_text(driver, "#exp-findings-lead", "210 findings")
    shown = " | ".join(driver.execute_script("return window.__progress;"))
    assert "copy_x105.csv (2.0 MB)" in shown and ("Sending" in shown or "Reading" in shown), shown
    wait_idle(driver)
    screenshot(driver, "explore-many-launches")
    assert_clean_console(driver)


def test_a_reload_or_a_visit_elsewhere_keeps_the_open_report(driver, live_app):
    from selenium.webdriver.common.by import By

    open_page(driver, live_app, "/explore", "#exp-upload")
    upload(driver, NCU_REP)
    wait_text(driver, "#exp-summary", "copy_strided_vs_coalesced.ncu-rep")
    wait_text(driver, "#exp-findings .finding.top", "Uncoalesced")
    driver.refresh()
    wait_text(driver, "#exp-summary", "copy_strided_vs_coalesced.ncu-rep")
    wait_text(driver, "#exp-findings .finding.top", "Uncoalesced")
    driver.find_element(By.ID, "nav-hardware").click()
    wait_for(driver, "#hw-ridges")
    driver.find_element(By.ID, "nav-explore").click()
    wait_text(driver, "#exp-summary", "copy_strided_vs_coalesced.ncu-rep")
    assert_clean_console(driver)


def _relayout(driver, css: str, lo_ms: float, hi_ms: float) -> None:
    driver.execute_script("Plotly.relayout(document.querySelector(arguments[0]), "
                          "{'xaxis.range[0]': arguments[1], 'xaxis.range[1]': arguments[2]});", css, lo_ms, hi_ms)


def _lane_labels(driver) -> list[str]:
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#exp-timeline .yaxislayer-above .ytick text'))"
        ".map(t => t.textContent);")


def test_zooming_into_an_idle_gap_keeps_the_lanes_and_says_how_long_it_is(driver, live_app):
    open_page(driver, live_app, "/explore", "#exp-upload")
    upload(driver, NSYS_SQLITE)
    wait_for(driver, "#exp-timeline .main-svg")
    wait_text(driver, "#exp-findings .finding.top", "pageable")
    lanes = _lane_labels(driver)
    assert sorted(lanes) == sorted(["NVTX · thread 608", "CUDA API · thread 608", "GPU 0 · stream 7",
                                    "GPU 0 · stream 7 · memcpy", "GPU 0 · stream 7 · memset"])
    # 4,872-4,916 ms: the GPU waits 44.0 ms for the host (the recording's largest gap)
    _relayout(driver, "#exp-timeline .js-plotly-plot", 4880.0, 4900.0)
    wait_text(driver, "#exp-timeline-note", "no GPU work here: an idle gap of 44.0 ms")
    wait_for(driver, "#exp-timeline .annotation-text", "GPU idle here: a gap of 44.0 ms")
    wait_idle(driver)
    assert sorted(_lane_labels(driver)) == sorted(lanes)
    screenshot(driver, "explore-timeline-gap")
    assert_clean_console(driver)


def test_a_search_outlines_its_matches_and_a_click_says_what_a_bar_holds(driver, live_app):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    open_page(driver, live_app, "/explore", "#exp-upload")
    upload(driver, NSYS_SQLITE)
    wait_for(driver, "#exp-timeline .main-svg")
    wait_text(driver, "#exp-findings .finding.top", "pageable")
    box = driver.find_element(By.ID, "exp-timeline-search")
    box.send_keys("softmax", Keys.ENTER)
    wait_text(driver, "#exp-timeline-matches-card", "match \"softmax\"", "cunn_SoftMaxForward")
    wait_for(driver, "#exp-timeline .trace.bars")
    assert driver.execute_script("return document.querySelector('#exp-timeline .js-plotly-plot').data"
                                 ".some(t => t.meta === 'match');")
    driver.execute_script("""
        const gd = document.querySelector('#exp-timeline .js-plotly-plot');
        const i = gd.data.findIndex(t => t.meta === 'kernel');
        gd.emit('plotly_click', {points: [{curveNumber: i, pointNumber: 0, y: gd.data[i].y[0],
                                           customdata: gd.data[i].customdata[0]}]});""")
    wait_for(driver, "#exp-timeline-detail-card")
    assert_clean_console(driver)


def test_a_baseline_is_compared_as_coach_diff_does(driver, live_app, tmp_path):
    from selenium.webdriver.common.by import By

    open_page(driver, live_app, "/explore", "#exp-upload")
    upload(driver, NCU_REP)
    wait_text(driver, "#exp-summary", NCU_REP.name)
    wait_idle(driver)
    csv = DATA / "ncu_strided_copy" / "nvidia" / "raw.csv"
    upload(driver, csv)
    wait_text(driver, "#exp-summary", "raw.csv")
    wait_idle(driver)
    driver.find_element(By.CSS_SELECTOR, "#exp-compare-pick").click()
    wait_for(driver, "[role=option]", f"open: {NCU_REP.name}").click()
    verdict = wait_text(driver, "#exp-compare-verdict", "copy_strided")
    assert "Comparable" in verdict or "Check before trusting" in verdict
    assert f"coach diff {NCU_REP.name} raw.csv" in wait_text(driver, "#exp-compare-card", "coach diff")
    wait_idle(driver)
    screenshot(driver, "explore-compare")
    assert_clean_console(driver)
