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
    assert "takes 3.25 ms for 402,653,184 particles" in symptom.text  # median of the recorded slow runs
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
        "Result": ("#scn-result-stats", "2.37×"),  # 3.236 ms / 1.516 ms, recorded medians
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


def _commit_answers(driver, server, ids: list[str]) -> None:
    """Every scenario's answer committed in this tab's session, as the answer step leaves it."""
    import json

    driver.get(server.url + "/nowhere")  # the site's origin, for its session storage
    saved = {wid: {"step": 1, "answer": "what I would check first"} for wid in ids}
    driver.execute_script("sessionStorage.setItem('scn-saved', arguments[0]);"
                          "sessionStorage.setItem('scn-saved-timestamp', String(Date.now()));", json.dumps(saved))


def test_every_scenario_shows_coach_s_finding_and_the_code_of_its_fix(driver, live_app):
    from selenium.webdriver.common.by import By

    from coach.app.walkthrough import scenario_walkthroughs

    ids = [w.id for w in scenario_walkthroughs()]
    assert len(ids) == 20
    _commit_answers(driver, live_app, ids)
    for wid in ids:
        open_page(driver, live_app, f"/scenario/{wid}?step=4", ".step.current", "Bottleneck")
        found = wait_for(driver, "#scn-body .finding.top")
        assert found.text.strip(), wid
        open_page(driver, live_app, f"/scenario/{wid}?step=5", ".step.current", "Fix")
        diff = wait_for(driver, "#scn-diff .diff")
        changed = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#scn-diff .ln.del, #scn-diff .ln.add")]
        assert any(t.strip() for t in changed), wid  # lines the fix changed, marked
        assert "could not be told apart" not in diff.text, wid
        if wid in ("scenario-02", "scenario-15"):
            wait_idle(driver)
            screenshot(driver, f"{wid}-fix")
    assert_clean_console(driver)


def test_reload_back_and_forward_keep_the_step_and_the_committed_answer(driver, live_app):
    from selenium.webdriver.common.by import By

    open_page(driver, live_app, f"/scenario/{SCENARIO}", ".step.current", "Symptom")
    driver.find_element(By.ID, "scn-next").click()
    wait_for(driver, ".step.current", "Your first check")
    driver.find_element(By.ID, "scn-answer").send_keys("sectors per request of the global loads")
    driver.find_element(By.ID, "scn-commit").click()
    wait_for(driver, "#scn-your-answer", "sectors per request")
    for step in ("Evidence", "Bottleneck"):
        wait_for(driver, "#scn-next:enabled").click()
        wait_for(driver, ".step.current", step)
    assert driver.current_url.endswith("?step=4")
    driver.refresh()
    wait_for(driver, ".step.current", "Bottleneck")
    wait_for(driver, "#scn-body .finding.top", "Uncoalesced")
    driver.back()
    wait_for(driver, ".step.current", "Evidence")
    driver.back()
    wait_for(driver, ".step.current", "Your first check")
    assert "sectors per request" in wait_for(driver, "#scn-your-answer").text  # still committed
    driver.forward()
    wait_for(driver, ".step.current", "Evidence")
    # another page and back: the walkthrough is where it was
    driver.find_element(By.ID, "nav-home").click()
    wait_for(driver, "#tile-explore")
    driver.back()
    wait_for(driver, ".step.current", "Evidence")
    assert_clean_console(driver)


def test_a_step_in_the_url_cannot_skip_the_answer(driver, live_app):
    from selenium.webdriver.common.by import By

    open_page(driver, live_app, f"/scenario/{SCENARIO}?step=5", ".step.current", "Your first check")
    assert not driver.find_element(By.ID, "scn-next").is_enabled()
    assert_clean_console(driver)


def test_a_timeline_scenario_shows_coach_s_finding_and_both_timelines_on_one_scale(driver, live_app):
    _commit_answers(driver, live_app, ["scenario-15"])
    open_page(driver, live_app, "/scenario/scenario-15?step=4", ".step.current", "Bottleneck")
    assert "pageable" in wait_for(driver, "#scn-body .finding.top").text.lower()
    open_page(driver, live_app, "/scenario/scenario-15?step=6", ".step.current", "Result")
    wait_for(driver, "#scn-timeline-fixed .main-svg")
    ranges = driver.execute_script(
        "return ['slow', 'fixed'].map(v => document.querySelector('#scn-timeline-' + v + ' .js-plotly-plot')"
        ".layout.xaxis.range);")
    assert ranges[0] == ranges[1]
    wait_idle(driver)
    screenshot(driver, "scenario-15-result")
    assert_clean_console(driver)
