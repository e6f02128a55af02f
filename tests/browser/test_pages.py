"""Each page loads in headless Chromium, shows what it is for, and leaves the console clean."""

from __future__ import annotations

from conftest import assert_clean_console, open_page, screenshot, wait_for, wait_idle


def _tflops(ladder: str, key: str, results: str = "results.json") -> str:
    """A rung's or peer's rate as the pages print it, from the recording."""
    from coach.ladders import load_results, results_path  # noqa: PLC0415

    res = load_results(results_path(ladder).parent / results)
    m = next(m for m in (*res.rungs, *res.peers) if m.key == key)
    return f"{m.flops / m.time_s / 1e12:.1f} TFLOP/s"


def test_home_lists_the_walkthrough_and_the_way_to_your_own_report(driver, live_app):
    open_page(driver, live_app, "/", "#tile-strided-copy", "A gather that reads every 33rd float")
    assert "Open your own report" in wait_for(driver, "#tile-explore").text
    from coach.ladders import load_results, results_path  # noqa: PLC0415

    res = load_results(results_path("softmax"))  # the measured ceiling: the best rate recorded on the GPU
    last = next(m for m in res.rungs if m.key == "05_triton")
    share = f"{100 * last.bytes_per_s / res.ceiling_value:.1f}%"
    assert f"4.00 TB/s ({share} of the measured ceiling)" in wait_for(driver, "#home-ladders #tile-ladder-softmax").text
    assert _tflops("matmul/bf16", "10_wgmma_tma_store") in wait_for(driver, "#home-ladders #tile-ladder-matmul-bf16").text
    screenshot(driver, "home")
    assert_clean_console(driver)


def test_a_ladder_tile_opens_its_ladder(driver, live_app):
    open_page(driver, live_app, "/", "#tile-ladder-scan", "goal met").click()
    wait_for(driver, "#lad-rungs", "look-back with 16-byte loads and stores")
    assert driver.current_url.endswith("/ladders/scan?gpu=h200")
    assert_clean_console(driver)


def test_hardware_page_draws_the_h200_roofline_and_predicts(driver, live_app):
    open_page(driver, live_app, "/hardware", "#hw-roofline .main-svg")
    wait_for(driver, "#hw-ridges", "BF16 tensor")
    wait_idle(driver)
    assert "memory (dram)" in wait_for(driver, "#hw-prediction", "bound by").text
    screenshot(driver, "hardware")
    assert_clean_console(driver)


def test_the_ladders_overview_leads_to_a_ladder_in_full(driver, live_app):
    from selenium.webdriver.common.by import By

    open_page(driver, live_app, "/ladders", "#lad-overview", "Row softmax of a 32768 x 4096 bf16 matrix")
    wait_for(driver, "#lad-body .js-plotly-plot .scatterlayer .trace")
    driver.find_element(By.LINK_TEXT, "Row softmax of a 32768 x 4096 bf16 matrix").click()
    rungs = wait_for(driver, "#lad-rungs", "Triton, one program per row")
    assert "134.1 µs" in rungs.text and "4.00 TB/s" in rungs.text
    assert "reaches 4.00 TB/s: met" in wait_for(driver, "#lad-goal").text
    wait_for(driver, "#lad-trajectory .js-plotly-plot .scatterlayer .trace")
    wait_for(driver, "#lad-steps .js-plotly-plot .barlayer .trace")
    wait_idle(driver)
    screenshot(driver, "ladders")
    assert_clean_console(driver)


def test_a_compute_ladder_draws_its_flop_rates_and_each_rung_on_the_roofline(driver, live_app):
    open_page(driver, live_app, "/ladders/matmul/bf16", "#lad-rungs", "TMA descriptors, persistent grid")
    assert _tflops("matmul/bf16", "05_tma_persistent") in wait_for(driver, "#lad-rungs").text
    assert f"reaches {_tflops('matmul/bf16', '05_tma_persistent')}, ×1.02 of cublas.bf16: met" in wait_for(driver, "#lad-goal").text
    wait_for(driver, "#lad-trajectory .js-plotly-plot .scatterlayer .trace")
    wait_for(driver, "#lad-roofline .js-plotly-plot .scatterlayer .trace")
    wait_idle(driver)
    screenshot(driver, "ladder-matmul")
    assert_clean_console(driver)


def test_the_size_links_show_a_ladder_at_another_size_without_reloading(driver, live_app):
    from selenium.webdriver.common.by import By

    open_page(driver, live_app, "/ladders/attention", "#lad-sizes", "h200_causal")
    assert _tflops("attention", "05_tma") in wait_for(driver, "#lad-rungs").text
    driver.execute_script("window.__sameDocument = true;")
    driver.find_element(By.PARTIAL_LINK_TEXT, "h200_causal").click()
    causal = _tflops("attention", "04_causal_skip", "results.h200_causal.json")
    assert causal in wait_for(driver, "#lad-rungs", causal).text
    from coach.ladders import load_definition  # noqa: PLC0415

    last = _tflops("attention", load_definition("attention").rungs[-1].key, "results.h200_causal.json")
    assert "of torch.sdpa: met" in wait_for(driver, "#lad-goal", f"reaches {last}").text
    assert driver.current_url.endswith("/ladders/attention?gpu=h200&size=h200_causal")
    assert "active" in driver.find_element(By.PARTIAL_LINK_TEXT, "h200_causal").get_attribute("class")
    assert driver.execute_script("return window.__sameDocument === true;")
    assert_clean_console(driver)


def test_a_ladder_that_misses_its_goal_opens_the_notes_on_why(driver, live_app):
    open_page(driver, live_app, "/ladders/gemv", "#lad-goal", "3.77 TB/s: missed")
    assert "missed by the last rung" in wait_for(driver, "#lad-goal details .notes", "The goal is met by rung 02").text
    assert_clean_console(driver)


def test_unknown_path_says_so(driver, live_app):
    open_page(driver, live_app, "/nowhere", "h1", "Page not found")
    assert_clean_console(driver)


def test_a_timeline_scenario_opens_on_its_slow_timeline(driver, live_app):
    open_page(driver, live_app, "/scenario/scenario-15", "#scn-body", "One step takes 47.4 ms")
    wait_for(driver, "#scn-body .js-plotly-plot .trace.bars")
    wait_idle(driver)
    screenshot(driver, "scenario-15-symptom")
    assert_clean_console(driver)


def test_the_navigation_moves_between_pages_without_reloading(driver, live_app):
    from selenium.webdriver.common.by import By

    open_page(driver, live_app, "/", "#tile-explore")
    driver.execute_script("window.__sameDocument = true;")
    driver.find_element(By.ID, "nav-hardware").click()
    wait_for(driver, "#hw-ridges", "BF16 tensor")
    assert "active" in driver.find_element(By.ID, "nav-hardware").get_attribute("class")
    driver.back()
    wait_for(driver, "#tile-explore")
    assert driver.execute_script("return window.__sameDocument === true;")
    assert_clean_console(driver)
