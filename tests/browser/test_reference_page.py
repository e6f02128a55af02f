"""The Reference page: glossary lookup with typos, the numbers sheet per GPU, the quick references."""

from __future__ import annotations

from conftest import assert_clean_console, open_page, screenshot, type_and_enter, wait_for, wait_idle


def test_the_glossary_forgives_a_typo_and_follows_see_also(driver, live_app):
    from selenium.webdriver.common.by import By

    open_page(driver, live_app, "/reference", "#ref-entry", "Resident warps per SM")
    type_and_enter(driver, "ref-term", "bank conflcit")
    entry = wait_for(driver, "#ref-entry", "32 banks")
    assert "for 'bank conflcit'" in entry.text and "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum" in entry.text
    driver.execute_script("window.__sameDocument = true;")
    driver.find_element(By.CSS_SELECTOR, "#ref-entry").find_element(By.LINK_TEXT, "swizzle").click()
    wait_for(driver, "#ref-entry", "XORing the column index")
    assert driver.current_url.endswith("/reference?term=swizzle")
    assert driver.execute_script("return window.__sameDocument === true;")
    type_and_enter(driver, "ref-term", "xyzzy")
    assert "No glossary entry for 'xyzzy'" in wait_for(driver, "#ref-entry", "No glossary entry").text
    assert_clean_console(driver)


def test_the_numbers_say_where_each_comes_from_and_the_sheets_show_code(driver, live_app):
    from selenium.webdriver.common.by import By

    open_page(driver, live_app, "/reference", "#ref-numbers", "HBM bandwidth (datasheet)")
    numbers = wait_for(driver, "#ref-numbers", "4.80 TB/s")
    # L1, L2 and DRAM load latencies measured on the H200, and Little's law's bytes in flight from the last
    assert "L1 hit load latency" in numbers.text and "22.3 ns" in numbers.text
    assert "DRAM load latency" in numbers.text and "358 ns" in numbers.text
    assert "Bytes in flight to fill HBM" in numbers.text and "needs the DRAM load latency" not in numbers.text
    assert "__shfl_xor_sync" in wait_for(driver, "#ref-cuda-warp").text
    wait_idle(driver)
    screenshot(driver, "reference")
    driver.find_element(By.XPATH, "//div[contains(@class,'tab') and normalize-space()='Triton']").click()
    assert "tl.dot(a_t, b_t, acc)" in wait_for(driver, "#ref-triton-matmul").text
    assert_clean_console(driver)


def test_the_numbers_of_another_gpu_open_from_the_url(driver, live_app):
    open_page(driver, live_app, "/reference?gpu=gb200", "#ref-numbers", "10.0 PFLOP/s")
    assert "72" in wait_for(driver, "#ref-numbers", "GPUs in one NVLink domain").text
    assert_clean_console(driver)
