"""The dashboard on a phone's screen (390 px wide) and what the page loads."""

from __future__ import annotations

import pytest
from conftest import WINDOW, assert_clean_console, open_page, wait_for, wait_idle

PHONE = (390, 844)
PAGES = [
    ("/", "#tile-explore"),
    ("/explore", "#exp-upload"),
    ("/scenario/scenario-01", "#scn-body .stats"),
    ("/hardware", "#hw-ridges"),
    ("/ladders", "#lad-overview"),
]


def _phone_shot(driver, name: str) -> None:
    from conftest import SCREENSHOTS

    height = driver.execute_script("return document.documentElement.scrollHeight;")
    chrome = driver.execute_script("return window.outerHeight - window.innerHeight;")
    driver.set_window_size(PHONE[0], min(int(height) + int(chrome) + 20, 6000))
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(SCREENSHOTS / f"{name}.png"))
    driver.set_window_size(*PHONE)


@pytest.mark.parametrize("path, ready", PAGES)
def test_every_page_fits_a_phone_screen(driver, live_app, path, ready):
    driver.set_window_size(*PHONE)
    open_page(driver, live_app, path, ready)
    wait_idle(driver)
    inner = driver.execute_script("return window.innerWidth;")
    assert inner <= PHONE[0]
    wide = driver.execute_script("return document.documentElement.scrollWidth;")
    assert wide <= inner, f"{path} is {wide} px wide on a {inner} px screen"
    if path in ("/", "/scenario/scenario-01"):
        _phone_shot(driver, "phone-" + ("home" if path == "/" else "scenario"))
    driver.set_window_size(*WINDOW)
    assert_clean_console(driver)


def test_the_page_loads_no_bundle_it_does_not_use(driver, live_app):
    open_page(driver, live_app, "/scenario/scenario-01", "#scn-body .stats")
    wait_for(driver, "#scn-body")
    wait_idle(driver)
    loaded = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name);")
    assert any("plotly" in u for u in loaded)
    assert not [u for u in loaded if "mathjax" in u.lower() or "datepicker" in u]
    assert_clean_console(driver)
