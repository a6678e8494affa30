"""Configuration defaults, resolved in one place: argument, then environment, then default.

Commands take their defaults from here, so ``STREAMEVAL_*`` variables are read in this
module only and mean the same thing for every command.
"""

from __future__ import annotations

import os
from pathlib import Path

#: where the metrics endpoint binds; loopback unless configured (rules of the house)
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9108


def host() -> str:
    """``STREAMEVAL_HOST`` or 127.0.0.1."""
    return os.environ.get("STREAMEVAL_HOST") or DEFAULT_HOST


def port() -> int:
    """``STREAMEVAL_PORT`` or 9108; a value that is not a port number is an error."""
    raw = os.environ.get("STREAMEVAL_PORT")
    if not raw:
        return DEFAULT_PORT
    try:
        value = int(raw)
    except ValueError:
        raise SystemExit(f"streameval: STREAMEVAL_PORT={raw!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise SystemExit(f"streameval: STREAMEVAL_PORT={raw!r} is out of range")
    return value


#: the bearer token pushed runs must carry (``watch --ingest``)
INGEST_TOKEN_ENV = "STREAMEVAL_INGEST_TOKEN"


def ingest_token() -> str | None:
    """``STREAMEVAL_INGEST_TOKEN``, or None when unset or empty."""
    return os.environ.get(INGEST_TOKEN_ENV) or None


#: variables that may hold a secret: the ingest token, OTLP exporters' auth headers
SECRET_ENV = (INGEST_TOKEN_ENV, "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
              "OTEL_EXPORTER_OTLP_LOGS_HEADERS")


def without_secrets() -> dict[str, str]:
    """This process's environment but ``SECRET_ENV``: for a child that needs none of
    them (the front gets the token on its private socket), so its ``/proc/PID/environ``
    holds none."""
    return {k: v for k, v in os.environ.items() if k not in SECRET_ENV}


def ingest_token_file() -> Path:
    """Where ``watch --ingest`` keeps the token it made when given none
    (``live.pushtoken``): ``$XDG_CONFIG_HOME/streameval/ingest-token``, by default
    ``~/.config/streameval/ingest-token``."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "streameval" / "ingest-token"


def toml_loads(text: str, where: str, error: type[Exception]) -> dict:
    """A TOML document as a dict; ``error(message)`` (naming ``where``) when it is not
    TOML. Python 3.11+ reads TOML itself; 3.10 needs ``tomli`` (a dependency there)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{where}: not valid TOML: {exc}") from None


def read_text_file(path: str | os.PathLike[str], what: str, error: type[Exception]) -> str:
    """A configuration file's text; ``error("<path>: cannot read <what> (...)")`` when it
    cannot be read or is not UTF-8 (abort policies, tool maps)."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{path}: cannot read {what} ({exc})") from None


CLAUDE_TRANSCRIPTS_ENV = "STREAMEVAL_CLAUDE_TRANSCRIPTS"


def claude_transcript_roots() -> list[str]:
    """Folders a hook's ``transcript_path`` may be read from (traces.ingest.transcript):
    ``STREAMEVAL_CLAUDE_TRANSCRIPTS`` (``:``-separated; empty: none), else Claude Code's
    own, ``$CLAUDE_CONFIG_DIR/projects`` and ``~/.claude/projects``."""
    raw = os.environ.get(CLAUDE_TRANSCRIPTS_ENV)
    if raw is not None:
        return [p for p in raw.split(":") if p]
    roots = [os.path.join(os.path.expanduser("~"), ".claude", "projects")]
    own = os.environ.get("CLAUDE_CONFIG_DIR")
    if own:
        roots.insert(0, os.path.join(own, "projects"))
    return roots


# ------------------------------------------------------------------ folders of a checkout
# The folders the benchmarks, scripts and tests read besides the package: none is
# needed to use streameval, and each is a place on the machine that ran them. Each is an
# option of the script that reads it, else the variable below, else nothing (the script
# says what to give). Their layout is described once, in benchmarks/README.md ("Folders").

#: a folder of git mirrors laid out as ``<owner>+<name>/repo`` (the ``fetch`` tool's)
MIRRORS_ENV = "STREAMEVAL_MIRRORS"
#: a folder of repository clones named ``<owner>__<name>`` (``--repos`` of replay)
REPOS_ENV = "STREAMEVAL_REPOS"
#: an older checkout with its own ``.venv``, for benchmarks that compare against it
BASE_ENV = "STREAMEVAL_BASE"
#: the agent CLIs' cache folder (``tests/agents/clis.py install``)
AGENTS_ENV = "STREAMEVAL_AGENTS"
#: the ``phoenix`` command of Arize Phoenix's own virtual environment (the OTLP export test)
PHOENIX_ENV = "STREAMEVAL_PHOENIX"
#: the browser the page's tests drive (Debian's chromium unless told), and a folder the
#: screenshots they take are copied to (the README's pictures are taken so)
CHROMIUM_ENV = "STREAMEVAL_CHROMIUM"
SCREENSHOTS_ENV = "STREAMEVAL_SCREENSHOTS"
#: ``network``: the README's own test lets pip download (tests/web/test_readme.py)
README_PIP_ENV = "STREAMEVAL_README_PIP"


def setting(env: str) -> str | None:
    """A ``STREAMEVAL_*`` setting that is neither a folder nor a number, as given (None
    when unset or empty)."""
    return os.environ.get(env) or None


#: what ``.ci/run`` installs the agent CLIs and Phoenix under, when not told
CACHE = Path.home() / ".cache" / "streameval"


def local_path(env: str, given: str | os.PathLike[str] | None = None) -> Path | None:
    """A folder (or program) given as an option, else named by the variable ``env``, else
    None: the caller says what to give, or takes its own default."""
    if given is not None:
        return Path(given)
    raw = os.environ.get(env)
    return Path(raw).expanduser() if raw else None


HALT_AT_ENV = "STREAMEVAL_HALT_AT"


def halt_at(points: frozenset[str]) -> tuple[str, int] | None:
    """``STREAMEVAL_HALT_AT=POINT[:N]`` (tests only: ``live/halt.py``): the point of a
    run's life, of ``points``, where the watcher stops itself the N-th time (1 when not
    given); None when unset. A point not of ``points`` is an error."""
    raw = os.environ.get(HALT_AT_ENV)
    if not raw:
        return None
    point, _, nth = raw.partition(":")
    if point not in points or not (nth or "1").isdigit() or int(nth or "1") < 1:
        raise SystemExit(f"streameval: {HALT_AT_ENV}={raw!r}: expected POINT[:N], POINT one "
                         f"of {', '.join(sorted(points))}")
    return point, int(nth or "1")


HALT_AGAIN_ENV = "STREAMEVAL_HALT_AGAIN_AT"


def restarted_env() -> dict[str, str]:
    """The environment of a worker started again (``watch --workers N``, tests only):
    the halt point of ``STREAMEVAL_HALT_AT`` is the first worker's, a worker started
    again stops where ``STREAMEVAL_HALT_AGAIN_AT`` says (nowhere when unset)."""
    env = {k: v for k, v in os.environ.items() if k not in (HALT_AT_ENV, HALT_AGAIN_ENV)}
    again = os.environ.get(HALT_AGAIN_ENV)
    if again:
        env[HALT_AT_ENV] = again
    return env


#: worker processes ``watch`` and ``replay`` use at most by default
MAX_DEFAULT_WORKERS = 8


def default_workers() -> int:
    """The cores this process may run on (its CPU affinity, as a container or
    ``taskset`` sets it), at most ``MAX_DEFAULT_WORKERS``: ``--workers``' default."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):   # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_DEFAULT_WORKERS))
