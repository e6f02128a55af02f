"""The Practice page: a drill answered and graded in the browser (and recorded), a plan of any length."""

from __future__ import annotations

import re

from conftest import assert_clean_console, open_page, screenshot, type_and_enter, wait_for, wait_idle


def test_a_drill_is_posed_graded_and_recorded(driver, live_app):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    from coach.exercises.progress import ProgressStore

    question = open_page(driver, live_app, "/practice?kind=pipeline-bubble", "#prc-question", "pipeline stages").text
    p, m = (int(x) for x in re.search(r"p = (\d+) pipeline stages and each step runs m = (\d+)", question).groups())
    answer = 100 * (p - 1) / (m + p - 1)  # the bubble, worked here as the candidate would
    driver.find_element(By.ID, "prc-answer").send_keys(f"{answer:.1f}%", Keys.ENTER)
    feedback = wait_for(driver, "#prc-feedback", "right:")
    assert "Worked solution" in feedback.text and "(p-1)/(m+p-1)" in feedback.text
    with ProgressStore(live_app.app.ctx.settings.progress_path) as store:
        drills = store.attempts().filter(kind="drill")
    assert drills.height >= 1 and drills["item"][-1].startswith(f"pipeline-bubble:{p}:{m}")
    driver.find_element(By.ID, "prc-new").click()
    wait_for(driver, "#prc-question", "pipeline stages")
    assert driver.find_element(By.ID, "prc-feedback").text == ""  # a new drill clears the last answer
    assert_clean_console(driver)


def test_a_plan_of_any_length(driver, live_app):
    from selenium.webdriver.common.by import By

    open_page(driver, live_app, "/practice", "#prc-plan", "One week")
    type_and_enter(driver, "prc-days", "28")
    plan = wait_for(driver, "#prc-plan", "Four weeks")
    assert "Execution model: warps, occupancy, latency" in plan.text and "coach exercise" in plan.text
    wait_idle(driver)
    screenshot(driver, "practice")
    driver.find_element(By.LINK_TEXT, "3 days").click()
    assert "Three-day sprint" in wait_for(driver, "#prc-plan", "Three-day sprint").text
    type_and_enter(driver, "prc-days", "10")
    assert "no curated 10-day plan" in wait_for(driver, "#prc-plan", "fitted from the 14-day plan").text
    assert_clean_console(driver)
