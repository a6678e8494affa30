"""The README followed word for word: its quick start's commands, read from its own fenced
block, run in bash on a fresh copy of the checkout (the files git tracks, as a clone has
them), go from nothing to the page showing the bundled example runs in Chromium. This
test takes the pictures the README and docs/page.md show, at 1,280 px.

The venv the commands make installs the copy itself, and by default reuses the
dependencies this test runs with (pip offline, no dependency resolved: a CI machine
downloads nothing twice). ``STREAMEVAL_README_PIP=network`` runs ``pip install`` as a
newcomer would, from the index."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import threading
import time
from pathlib import Path

import pytest
from web_process import ROOT

from streameval import config

pytestmark = [pytest.mark.browser, pytest.mark.slow]

README = ROOT / "README.md"
#: the four runs under examples/: the example run, two backtest runs, the predictions
EXAMPLE_RUNS = {"example-run-1", "late-find-1", "runaway-1", "predictions"}


def quick_start(text: str) -> list[str]:
    """The commands of the first ```bash block of the "Quick start" section, as written."""
    section = text.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, "the quick start has no ```bash block"
    return [line for line in block.group(1).splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def fresh_checkout(dest: Path) -> Path:
    """The checkout's files as a clone of it would hold them: tracked ones, and new ones
    not ignored (a change not yet committed is tested too), links kept as links."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                                cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        msg = f"not a git checkout ({exc}): nothing to clone"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    for name in filter(None, listed.decode().split("\0")):
        src, out = ROOT / name, dest / name
        if not src.is_symlink() and not src.exists():
            continue   # deleted, not yet committed
        out.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            out.symlink_to(os.readlink(src))
        else:
            shutil.copy2(src, out)
    return dest


def environment(tmp: Path) -> dict[str, str]:
    """What the README's commands run with: this test's Python as `python3`, a free port
    (STREAMEVAL_PORT: the command stays as written), and pip reusing what is installed."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(getattr(sys, "_base_executable", sys.executable))
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
           "HOME": os.environ.get("HOME", str(tmp)), "LANG": "C.UTF-8", "STREAMEVAL_PORT": "0"}
    if config.setting(config.README_PIP_ENV) != "network":
        env.update(PYTHONPATH=sysconfig.get_paths()["purelib"], PIP_NO_INDEX="1", PIP_NO_DEPS="1",
                   PIP_NO_BUILD_ISOLATION="0", PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


class Commands:
    """The commands in one bash, the last (the watcher) left running; its output read
    all along. Stopped with Ctrl-C (SIGINT) sent to its own process group."""

    def __init__(self, lines: list[str], cwd: Path, env: dict[str, str]):
        script = cwd / ".readme-quick-start.sh"
        script.write_text("set -eu\n" + "\n".join(lines) + "\n")
        self.proc = subprocess.Popen(["bash", str(script)], cwd=cwd, env=env, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line)

    def page_url(self, timeout: float = 240.0) -> str:
        deadline = time.monotonic() + timeout   # a hang guard: pip and the watcher's start
        while time.monotonic() < deadline:
            for line in list(self.lines):
                m = re.search(r"the page on (http://\S+/)", line)
                if m:
                    return m.group(1)
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError("the quick start never served the page:\n" + "".join(self.lines)[-4000:])

    def stop(self) -> str:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self._reader.join(timeout=30)
        self.proc.stdout.close()
        return "".join(self.lines)


def test_the_readme_quick_start_word_for_word_shows_the_example_runs(tmp_path, page):
    text = README.read_text()
    lines = quick_start(text)
    # the two lines the README gives: install, then watch the bundled examples
    assert len(lines) == 2 and "pip install" in lines[0] and lines[1].startswith("streameval watch "), lines
    assert f"`{lines[1]}`" in text, "the bring-your-own section names the same command"
    checkout = fresh_checkout(tmp_path / "streameval")
    assert not (checkout / ".venv").exists()
    run = Commands(lines, checkout, environment(tmp_path))
    try:
        page.tab.goto(run.page_url())
        page.tab.wait_for_function(
            "n => document.querySelectorAll('#fleet tbody tr').length === n", arg=len(EXAMPLE_RUNS))
        page.tab.wait_for_function(
            "() => document.querySelector('#fleet-summary').textContent.includes('4 finished')")
        ids = page.tab.eval_on_selector_all("#fleet tbody tr", "rows => rows.map(r => r.dataset.run)")
        assert set(ids) == EXAMPLE_RUNS
        assert page.tab.evaluate("document.documentElement.scrollWidth") <= 1280
        page.screenshot("page-fleet.png")
        page.tab.click("a.run-link >> text=example-run-1")
        page.tab.wait_for_function(
            "() => document.querySelector('polyline[data-granularity=line]')?.dataset.points === '14'")
        page.tab.wait_for_selector("section.strip rect.edited", state="attached")
        page.tab.evaluate("document.fonts.ready")
        page.screenshot("page-run.png")
        page.screenshot("page-overview.png", down_to="#strips")
        assert page.problems() == []
    finally:
        output = run.stop()
    # the venv the README made, in the copy: its streameval is the copy's
    assert (checkout / ".venv" / "bin" / "streameval").exists(), output[-3000:]
    assert "Traceback" not in output, output[-3000:]
