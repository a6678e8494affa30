"""Browser tests: Debian's chromium driven by Playwright (pip ``playwright``, launched with
the system browser's executable; no browser is downloaded), against a real
``streameval watch`` or ``view`` process over real files.

Without chromium or playwright the tests are skipped on a developer machine and fail in
CI (``CI`` set), as the Prometheus tests do; ``.ci/run`` installs both. The browser's
window is 1,280 px wide. Screenshots go to the test's folder, and also to
``$STREAMEVAL_SCREENSHOTS`` when set (the pictures of the README and the docs are taken so,
by ``test_readme.py``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from streameval import config

CHROMIUM = str(config.local_path(config.CHROMIUM_ENV) or "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _require() -> None:
    missing = []
    if not Path(CHROMIUM).exists():
        missing.append(f"{CHROMIUM} (apt-get install -y chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("playwright (pip install playwright; no `playwright install`)")
    if missing:
        msg = "browser tests need " + " and ".join(missing) + "; .ci/run installs both"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)


@pytest.fixture(scope="session")
def browser_context(tmp_path_factory):
    """One Chromium for the session, with a fresh profile directory."""
    _require()
    from playwright.sync_api import sync_playwright

    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=ARGS,
            viewport={"width": 1280, "height": 900})
        context.set_default_timeout(30_000)   # a hang guard, not a speed assertion
        try:
            yield context
        finally:
            context.close()


class Page:
    """A browser tab that records console messages and page errors."""

    def __init__(self, context, shots: Path):
        self.tab = context.new_page()
        self.shots = shots
        self.console: list[tuple[str, str]] = []
        self.errors: list[str] = []
        self.tab.on("console", lambda m: self.console.append((m.type, m.text)))
        self.tab.on("pageerror", lambda e: self.errors.append(str(e)))

    def screenshot(self, name: str, down_to: str | None = None) -> Path:
        """The whole page, or from its top down to the bottom of ``down_to`` (a selector)."""
        path = self.shots / name
        if down_to is None:
            self.tab.screenshot(path=str(path), full_page=True)
        else:
            box = self.tab.eval_on_selector(down_to, "e => e.getBoundingClientRect().bottom + window.scrollY")
            width = self.tab.evaluate("document.documentElement.clientWidth")
            self.tab.screenshot(path=str(path), full_page=True,
                                clip={"x": 0, "y": 0, "width": width, "height": box + 12})
        extra = config.local_path(config.SCREENSHOTS_ENV)
        if extra:
            Path(extra).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, Path(extra) / name)
        return path

    def problems(self) -> list:
        """Console errors and warnings (a CSP violation is one), and page errors."""
        return [m for m in self.console if m[0] in ("error", "warning")] + self.errors

    def close(self) -> None:
        self.tab.close()


@pytest.fixture
def page(browser_context, tmp_path):
    tab = Page(browser_context, tmp_path)
    try:
        yield tab
    finally:
        tab.close()


@pytest.fixture
def setup(tmp_path):
    """(the claude_run setup: a two-file git repo and its gold, an empty runs folder)."""
    from claude_run import make_setup

    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    runs.mkdir()
    return s, runs
