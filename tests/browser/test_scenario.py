"""Walk the recorded pilot scenario through every step in Chromium: the answer must be committed
before the evidence. Numbers from traces/h200/scenario-01 (recorded on the H200, results.json)."""

from __future__ import annotations

from conftest import assert_clean_console, open_page, screenshot, wait_for, wait_idle

from coach.app.walkthrough import STEPS

SCENARIO = "scenario-01"


def test_walk_scenario_01_through_every_step(driver, live_app):
    from selenium.webdriver.common.by import By

    open_page(driver, live_app, f"/scenario/{SCENARIO}", ".step.current", "Symptom")
    symptom = wait_for(driver, "#scn-body", "32-byte struct")
    assert "takes 3.24 ms for 402,653,184 particles" in symptom.text  # median of the recorded slow runs
    assert "drift_x_aos" in wait_for(driver, "#scn-body .stats").text
    screenshot(driver, "scenario-1-symptom")

    driver.find_element(By.ID, "scn-next").click()
    wait_for(driver, ".step.current", "Your first check")
    wait_idle(driver)
    assert not driver.find_element(By.ID, "scn-next").is_enabled(), "the evidence must wait for an answer"
    driver.find_element(By.ID, "scn-answer").send_keys(
        "Sectors per request of the global loads, expecting 4 for coalesced 4-byte loads; "
        "compare DRAM bytes read with the useful bytes.")
    driver.find_element(By.ID, "scn-commit").click()
    wait_for(driver, "#scn-your-answer", "Sectors per request")
    wait_for(driver, "#scn-grade", "Against the rubric: 3 of 4")
    wait_for(driver, "#scn-body", "What a strong answer names")
    screenshot(driver, "scenario-2-first-check")

    expected = {
        "Evidence": ("#scn-evidence", "global load sectors per request global_load_sectors / global_load_requests 32 4"),
        "Bottleneck": ("#scn-body .finding.top", "Uncoalesced global loads: 32 sectors per request"),
        "Fix": ("#scn-diff", "drift_x_soa"),
        "Result": ("#scn-result-stats", "2.13×"),  # 3.236 ms / 1.516 ms, recorded medians
    }
    for n, step in enumerate(STEPS[2:], start=3):
        wait_for(driver, "#scn-next:enabled").click()
        wait_for(driver, ".step.current", step)
        css, text = expected[step]
        wait_for(driver, css, text)
        wait_idle(driver)
        screenshot(driver, f"scenario-{n}-{step.lower()}")
    wait_for(driver, "#scn-roofline .main-svg")
    assert len(driver.find_elements(By.CSS_SELECTOR, "#scn-body .js-plotly-plot")) == 3  # roofline, two timelines
    assert not driver.find_element(By.ID, "scn-next").is_enabled()
    assert_clean_console(driver)
