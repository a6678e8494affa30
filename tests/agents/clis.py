"""The real agent CLIs the tests drive: their versions (pinned here, nowhere else), where
they are installed, how to install them, and how to start each against a scripted model.

    python tests/agents/clis.py install      # what .ci/run does; idempotent
    python tests/agents/clis.py versions     # what is installed

They go into a cache folder (``$STREAMEVAL_AGENTS``, default ``~/.cache/streameval/agents``):
npm packages under ``npm/``, mini-swe-agent in its own virtualenv under ``mini/`` (its
dependencies are heavy and must not mix with the project's). The tests never install
anything; a CLI that is missing fails its test with the command that installs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

from streameval import config

CLAUDE_CODE = "2.1.328"
CODEX = "0.169.0"
MINI_SWE_AGENT = "2.4.6"
#: the OpenHands agent SDK (V1) needs Python >= 3.12; its tools come in a second package
OPENHANDS_SDK = "1.58.0"
#: Harbor (Python >= 3.12): its converters turn agents' native logs into ATIF
HARBOR = "0.24.0"
#: mini-swe-agent's tool-calling mode imports ``mcp`` through litellm's extra
LITELLM = "1.106.2"

NPM_PACKAGES = (f"@anthropic-ai/claude-code@{CLAUDE_CODE}", f"@openai/codex@{CODEX}")
PIP_PACKAGES = (f"mini-swe-agent=={MINI_SWE_AGENT}", f"litellm[mcp]=={LITELLM}")
SDK_PACKAGES = (f"openhands-sdk=={OPENHANDS_SDK}", f"openhands-tools=={OPENHANDS_SDK}")
HARBOR_PACKAGES = (f"harbor=={HARBOR}",)
INSTALL = "python tests/agents/clis.py install"

#: what a CLI needs from the environment, and nothing else (runs use ``env -i`` semantics)
BASE_PATH = "/usr/local/bin:/usr/bin:/bin"


def cache() -> Path:
    return config.local_path(config.AGENTS_ENV) or config.CACHE / "agents"


def claude() -> Path:
    return cache() / "npm" / "node_modules" / ".bin" / "claude"


def codex() -> Path:
    return cache() / "npm" / "node_modules" / ".bin" / "codex"


def mini() -> Path:
    return cache() / "mini" / "bin" / "mini"


def openhands_python() -> Path:
    """The interpreter of the OpenHands SDK's virtualenv."""
    return cache() / "openhands" / "bin" / "python"


def harbor_python() -> Path:
    """The interpreter of Harbor's virtualenv."""
    return cache() / "harbor" / "bin" / "python"


def python312() -> str | None:
    """An interpreter the SDK can run on (>= 3.12) that really runs: one pyenv keeps,
    or one on PATH (a pyenv shim of a version not selected does not run)."""
    import shutil

    found = [str(root / "bin" / "python") for root in
             sorted((Path.home() / ".pyenv" / "versions").glob("3.1[23].*"), reverse=True)]
    found += [p for p in (shutil.which("python3.13"), shutil.which("python3.12")) if p]
    for py in found:
        ok = subprocess.run([py, "-c", "import sys; assert sys.version_info >= (3, 12)"],
                            capture_output=True)
        if ok.returncode == 0:
            return py
    return None


def missing(binary: Path, name: str, version: str) -> str | None:
    """Why a CLI cannot run, or None when it can."""
    if binary.exists() and os.access(binary, os.X_OK):
        return None
    return (f"{name} {version} is not installed at {binary}: run `{INSTALL}` "
            f"(.ci/run does; STREAMEVAL_AGENTS sets the folder)")


def install() -> None:
    root = cache()
    npm = root / "npm"
    npm.mkdir(parents=True, exist_ok=True)
    if missing(claude(), "Claude Code", CLAUDE_CODE) or missing(codex(), "Codex", CODEX) \
            or _installed_npm(npm) != set(NPM_PACKAGES):
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error",
                        "--prefix", str(npm), *NPM_PACKAGES], check=True)
    _install_py312(root)
    env_dir = root / "mini"
    if missing(mini(), "mini-swe-agent", MINI_SWE_AGENT) or _mini_version() != MINI_SWE_AGENT:
        venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
        pip = env_dir / "bin" / "pip"
        subprocess.run([str(pip), "install", "-q", "--disable-pip-version-check",
                        *PIP_PACKAGES], check=True)


def _install_py312(root: Path) -> None:
    """The OpenHands SDK and Harbor, each in its own virtualenv (they need Python >= 3.12
    and pin different libraries)."""
    py = python312()
    if py is None:
        print("no Python >= 3.12 here: the OpenHands SDK and Harbor tests will be skipped",
              file=sys.stderr)
        return
    for name, dist, version, packages in (
            ("openhands", "openhands-sdk", OPENHANDS_SDK, SDK_PACKAGES),
            ("harbor", "harbor", HARBOR, HARBOR_PACKAGES)):
        env_dir = root / name
        if _module_version(env_dir / "bin" / "python", dist) == version:
            continue
        subprocess.run([py, "-m", "venv", "--clear", str(env_dir)], check=True)
        subprocess.run([str(env_dir / "bin" / "pip"), "install", "-q",
                        "--disable-pip-version-check", *packages], check=True)


def _module_version(py: Path, module: str) -> str | None:
    if not py.exists():
        return None
    dist = {"openhands.sdk": "openhands-sdk"}.get(module, module)   # module or dist name
    out = subprocess.run([str(py), "-c", f"from importlib.metadata import version; print(version({dist!r}))"],
                         capture_output=True, text=True)
    return out.stdout.strip() or None


def _installed_npm(npm: Path) -> set[str]:
    out = set()
    for name in ("@anthropic-ai/claude-code", "@openai/codex"):
        pkg = npm / "node_modules" / name / "package.json"
        if pkg.exists():
            out.add(f"{name}@{json.loads(pkg.read_text())['version']}")
    return out


def _mini_version() -> str | None:
    py = cache() / "mini" / "bin" / "python"
    if not py.exists():
        return None
    out = subprocess.run([str(py), "-c", "import minisweagent; print(minisweagent.__version__)"],
                         capture_output=True, text=True, env={**os.environ, "MSWEA_SILENT_STARTUP": "1"})
    lines = out.stdout.strip().splitlines()
    return lines[-1] if lines else None


def versions() -> dict[str, str | None]:
    def run(argv: list[str]) -> str | None:
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        except OSError:
            return None
        return (out.stdout or out.stderr).strip().splitlines()[0] if out.returncode == 0 else None
    return {"claude": run([str(claude()), "--version"]), "codex": run([str(codex()), "--version"]),
            "mini-swe-agent": _mini_version(),
            "openhands-sdk": _module_version(openhands_python(), "openhands-sdk"),
            "harbor": _module_version(harbor_python(), "harbor")}


if __name__ == "__main__":
    if sys.argv[1:] == ["install"]:
        install()
        print(json.dumps(versions()))
    elif sys.argv[1:] == ["versions"]:
        print(json.dumps(versions(), indent=1))
    else:
        print(__doc__)
        raise SystemExit(2)
