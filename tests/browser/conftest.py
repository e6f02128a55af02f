"""Browser tests: the dashboard served on a free local port, driven by Debian's headless Chromium.

Every test here is marked ``browser``. They skip, saying why, where Chromium, its driver or
selenium is missing; ``.ci/run`` installs all three. Each test ends with ``assert_clean_console``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

# The README's screenshots are refreshed only when asked (COACH_SCREENSHOTS=docs/screenshots), so a
# test run leaves the working tree as it found it; otherwise they go to a temporary folder.
SCREENSHOTS = Path(os.environ.get("COACH_SCREENSHOTS") or Path(tempfile.gettempdir()) / "coach-screenshots")
WINDOW = (1440, 900)  # a laptop screen
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage")
WAIT_S = 30


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if Path(item.fspath).is_relative_to(here):
            item.add_marker(pytest.mark.browser)


def _chromium() -> tuple[str, str]:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not browser or not driver:
        pytest.skip("needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver; .ci/run does)")
    return browser, driver


class LiveServer:
    """A Dash app served by werkzeug in a background thread on a free port."""

    def __init__(self, dash_app):
        from werkzeug.serving import make_server

        self.app = dash_app
        self._server = make_server("127.0.0.1", 0, dash_app.server, threaded=True)
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._thread.join(timeout=10)


@pytest.fixture(scope="session")
def live_app(tmp_path_factory) -> Iterator[LiveServer]:
    from app_support import strided_walkthrough

    from coach.app import Settings, create_app
    from coach.app.walkthrough import scenario_walkthroughs

    # the recorded copy pair, walked end to end, and the project's scenarios and ladders as they stand
    settings = Settings(walkthroughs=lambda: [strided_walkthrough(), *scenario_walkthroughs()],
                        progress_path=tmp_path_factory.mktemp("progress") / "progress.sqlite")
    server = LiveServer(create_app(settings))
    yield server
    server.close()


@pytest.fixture(scope="session")
def _driver_session(tmp_path_factory):
    browser, driver_path = _chromium()
    webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium (pip install -e '.[dev]')")
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = browser
    for flag in CHROMIUM_FLAGS:
        opts.add_argument(flag)
    opts.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    opts.add_argument(f"--window-size={WINDOW[0]},{WINDOW[1]}")
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(service=Service(driver_path), options=opts)
    drv.set_page_load_timeout(WAIT_S)
    yield drv
    drv.quit()


@pytest.fixture
def driver(_driver_session):
    """The browser, with an empty console log, the laptop-sized window and a fresh tab at the start of
    each test: a tab has its own session storage, so no test finds the report or the walkthrough
    answer the one before it left open."""
    old = _driver_session.current_window_handle
    _driver_session.switch_to.new_window("tab")
    fresh = _driver_session.current_window_handle
    _driver_session.switch_to.window(old)
    _driver_session.close()
    _driver_session.switch_to.window(fresh)
    _driver_session.set_window_size(*WINDOW)
    _driver_session.get("about:blank")
    _driver_session.get_log("browser")
    yield _driver_session


def type_and_enter(driver, element_id: str, text: str, tries: int = 4) -> None:
    """Replace the text of input ``element_id`` with ``text`` and press Enter, once the box holds exactly it.

    A re-render of the page under Selenium's keystrokes (a navigation's second layout pass) can move the
    caret mid-word; the glossary then gets 'xyzyz' for 'xyzzy'. The box is read back and retyped until it
    holds what was typed, so a test asserts what the page does with the text, not keystroke timing.
    """
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    for _ in range(tries):
        box = driver.find_element(By.ID, element_id)
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys(Keys.BACKSPACE)
        box.send_keys(text)
        time.sleep(0.2)
        try:
            box = driver.find_element(By.ID, element_id)
            if box.get_attribute("value") == text:
                box.send_keys(Keys.ENTER)
                return
        except Exception:  # re-rendered under us: type again
            pass
    raise AssertionError(f"#{element_id} would not hold {text!r} (it holds {box.get_attribute('value')!r})")


def wait_for(driver, css: str, text: str | None = None, timeout: float = WAIT_S):
    """The first element matching ``css`` (whose text contains ``text``, if given), once it is there."""
    from selenium.webdriver.common.by import By

    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        for el in driver.find_elements(By.CSS_SELECTOR, css):
            try:
                last = el.text
                if el.is_displayed() and (text is None or text.casefold() in last.casefold()):
                    return el
            except Exception:  # re-rendered under us: look again
                pass
        time.sleep(0.1)
    raise AssertionError(f"no visible {css!r}" + (f" containing {text!r} (last text: {last[:300]!r})" if text else ""))


def wait_idle(driver, timeout: float = WAIT_S) -> None:
    """Until Dash has no callback in flight (its renderer marks the document while one runs)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = driver.execute_script("return document.querySelector('[data-dash-is-loading=\"true\"]') !== null;")
        if not busy:
            return
        time.sleep(0.1)
    raise AssertionError("Dash still loading")


def open_page(driver, server: LiveServer, path: str, ready_css: str, text: str | None = None):
    driver.get(server.url + path)
    return wait_for(driver, ready_css, text)


def screenshot(driver, name: str) -> Path:
    """The whole page as <SCREENSHOTS>/<name>.png, at the laptop width."""
    height, chrome = driver.execute_script(
        "return [Math.max(document.body.scrollHeight, document.documentElement.scrollHeight), "
        "window.outerHeight - window.innerHeight];")  # the window's own bars take part of its height
    driver.set_window_size(WINDOW[0], max(WINDOW[1], min(int(height) + int(chrome) + 40, 6000)))
    time.sleep(0.3)  # plots resize to the new window
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    tmp = path.with_suffix(".part.png")
    driver.save_screenshot(str(tmp))
    tmp.replace(path)
    driver.set_window_size(*WINDOW)
    return path


def assert_clean_console(driver) -> None:
    """No error in the browser console since the test began."""
    errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    assert not errors, "browser console errors:\n" + "\n".join(e["message"] for e in errors)
