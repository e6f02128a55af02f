"""The kernel's source beside a finding, in Chromium: a heat column per line and the finding's line
highlighted. Data: scenario-01's slow recording (traces/h200/scenario-01/slow, recorded on the H200
with source counters; its NVRTC lines matched to scenarios/scenario-01-aos-particles/particles.cu)
and the strided-copy report (tests/data/ncu_strided_copy, source text embedded)."""

from __future__ import annotations

from conftest import assert_clean_console, open_page, screenshot, wait_for, wait_idle
from test_explore import NCU_REP, upload, wait_text

PLANTED = "x_out[i] = p[i].x + dt * p[i].vx;"


def test_explorer_shows_the_source_beside_the_uncoalesced_finding(driver, live_app):
    open_page(driver, live_app, "/explore?trace=h200/scenario-01/slow/ncu", "#exp-summary")
    hit = wait_text(driver, "#exp-source-0 tr.hit", PLANTED)
    assert hit.split()[0] == "24"  # the line number, then the heat share
    assert "96.4%" in hit  # particles.cu:24's share of the warp-state samples (coach source says the same)
    card = wait_text(driver, ".finding-source .finding.top", "Uncoalesced global loads")
    assert "At: particles.cu:24 (LDG), 100% of the launch's L2 sectors beyond a coalesced access" in card
    wait_idle(driver)
    screenshot(driver, "explore-source")
    assert_clean_console(driver)


def test_an_uploaded_report_with_embedded_source(driver, live_app):
    open_page(driver, live_app, "/explore", "#exp-upload")
    upload(driver, NCU_REP)
    hit = wait_text(driver, "#exp-source-0 tr.hit", "if (i < n) out[i] = in[(long)i*stride % n];")
    assert hit.split()[:2] == ["4", "91.7%"]
    assert_clean_console(driver)


def test_scenario_evidence_step_shows_the_planted_line(driver, live_app):
    from selenium.webdriver.common.by import By

    open_page(driver, live_app, "/scenario/scenario-01", ".step.current", "Symptom")
    driver.find_element(By.ID, "scn-next").click()
    wait_for(driver, ".step.current", "Your first check")
    wait_idle(driver)
    driver.find_element(By.ID, "scn-answer").send_keys("Sectors per request of the global loads.")
    driver.find_element(By.ID, "scn-commit").click()
    wait_for(driver, "#scn-your-answer", "Sectors per request")
    wait_for(driver, "#scn-next:enabled").click()
    wait_for(driver, ".step.current", "Evidence")
    hit = wait_for(driver, "#scn-source tr.hit", PLANTED)
    assert hit.text.split()[0] == "24"
    assert "particles.cu" in wait_for(driver, "#scn-body", "The slow kernel's source").text
    wait_idle(driver)
    screenshot(driver, "scenario-evidence-source")
    assert_clean_console(driver)
