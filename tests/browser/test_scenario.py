"""Walk a scenario through every step in Chromium: the answer must be committed before the evidence."""

from __future__ import annotations

from app_support import WALKTHROUGH_ID
from conftest import assert_clean_console, open_page, screenshot, wait_for, wait_idle

from coach.app.walkthrough import STEPS


def test_walk_the_strided_copy_through_every_step(driver, live_app):
    from selenium.webdriver.common.by import By

    open_page(driver, live_app, f"/scenario/{WALKTHROUGH_ID}", ".step.current", "Symptom")
    wait_for(driver, "#scn-body", "stride 33")
    assert "1.18 ms" in wait_for(driver, "#scn-body .stats").text  # copy_strided's recorded duration
    screenshot(driver, "scenario-1-symptom")

    nxt = driver.find_element(By.ID, "scn-next")
    nxt.click()
    wait_for(driver, ".step.current", "Your first check")
    wait_idle(driver)
    assert not driver.find_element(By.ID, "scn-next").is_enabled(), "the evidence must wait for an answer"
    driver.find_element(By.ID, "scn-answer").send_keys("Sectors per request of the global loads, expecting 4.")
    driver.find_element(By.ID, "scn-commit").click()
    wait_for(driver, "#scn-your-answer", "Sectors per request")
    wait_for(driver, "#scn-body", "What a strong answer names")
    screenshot(driver, "scenario-2-first-check")

    expected = {
        "Evidence": ("#scn-evidence", "67,108,864"),  # global load sectors of copy_strided
        "Bottleneck": ("#scn-body .finding.top", "Uncoalesced global loads"),
        "Fix": ("#scn-diff", "copy_coalesced"),
        "Result": ("#scn-result-stats", "5.96×"),  # 1,179,872 ns / 198,080 ns
    }
    for n, step in enumerate(STEPS[2:], start=3):
        wait_for(driver, "#scn-next:enabled").click()
        wait_for(driver, ".step.current", step)
        css, text = expected[step]
        wait_for(driver, css, text)
        wait_idle(driver)
        screenshot(driver, f"scenario-{n}-{step.lower()}")
    wait_for(driver, "#scn-roofline .main-svg")
    assert not driver.find_element(By.ID, "scn-next").is_enabled()
    assert_clean_console(driver)
