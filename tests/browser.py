"""Headless Chromium for the report's tests and screenshot: the system's browser, driven by Playwright.

Playwright cannot download its own browser here, so it drives Debian's ``chromium``
(``executable_path``); ``CHROMIUM`` names another binary. ``chromium()`` is None when
either is missing, and the browser tests skip.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path


def chromium_path() -> str | None:
    if "CHROMIUM" in os.environ:
        return shutil.which(os.environ["CHROMIUM"])  # None when it names nothing runnable
    return shutil.which("chromium") or shutil.which("chromium-browser")


def available() -> bool:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return False
    return chromium_path() is not None


def needs_browser(test):
    """A test that opens a page in Chromium: in the slow tier (the ``browser`` marker,
    tests/tiers.py), and skipped where Chromium or Playwright is missing."""
    import pytest

    skip = pytest.mark.skipif(not available(), reason="Chromium or Playwright is not installed")
    return pytest.mark.browser(skip(test))


@contextlib.contextmanager
def browser() -> Iterator[object]:
    """A headless Chromium (Playwright's Browser); Chromium's own sandbox is off when root, as it must be."""
    from playwright.sync_api import sync_playwright

    arguments = ["--no-sandbox"] if os.geteuid() == 0 else []
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium_path(), headless=True, args=arguments)
        try:
            yield launched
        finally:
            launched.close()


def screenshot(page_path: Path, image_path: Path, width: int = 1366, height: int = 768) -> None:
    """A laptop-sized screenshot of the whole page."""
    with browser() as chromium:
        page = chromium.new_page(viewport={"width": width, "height": height})
        page.goto(Path(page_path).resolve().as_uri(), wait_until="load")
        page.screenshot(path=str(image_path), full_page=True)


if __name__ == "__main__":
    import sys

    screenshot(Path(sys.argv[1]), Path(sys.argv[2]))
    print(f"screenshot: {sys.argv[2]}")
