"""Abort policies: the TOML file's shape, its checks, and the decision a policy makes.

Every mistake in a policy file is an ``AbortConfigError`` naming the file, the policy and
the key, so ``streameval watch --abort-config`` refuses a bad file before it starts.
"""

from __future__ import annotations

import json
import re
import signal as _signal
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from streameval.config import read_text_file, toml_loads
from streameval.model import GRANULARITIES
from streameval.scoring.snapshot import TOKEN_KINDS

ABORT_NAME = "ABORT"
ACTIONS = ("file", "webhook", "signal")

#: kind -> (required keys, optional keys with defaults)
KINDS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "max_steps": (("limit",), {}),
    "max_lines": (("limit",), {}),
    "max_bytes": (("limit",), {}),
    "stagnation": (("steps",), {"granularity": "line"}),
    "redundancy": (("above",), {"after_steps": 0, "granularity": "line"}),
    "precision": (("below",), {"after_steps": 0, "granularity": "line"}),
    "tokens": (("limit",), {"kinds": list(TOKEN_KINDS)}),
    "cost": (("limit_usd",), {}),
    "wall_time": (("seconds",), {}),
    # gold-free: what every run has (docs/outcomes.md §2), read from scoring.signals
    "no_new_files": (("steps",), {}),
    "repeats": (("times",), {}),
    "reread_share": (("above",), {"after_steps": 0}),
}
COMMON_KEYS = ("name", "kind", "action", "url", "signal", "description")
#: kinds whose value moves with the clock alone (checked at every watcher tick)
TIME_KINDS = frozenset({"wall_time"})
#: kinds that read a run's gold-free signals (``scoring.signals``): any run has them
SIGNAL_KINDS = frozenset({"no_new_files", "repeats", "reread_share"})
#: kinds whose threshold is a share (0 to 1)
RATIO_KINDS = frozenset({"redundancy", "precision", "reread_share"})
#: kinds whose threshold must be at least this (1 would trip on the first call)
MINIMUM = {"repeats": 2.0, "no_new_files": 1.0}
_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")


class AbortConfigError(ValueError):
    """The policy file cannot be used; the message names the file, policy and key."""


# ---------------------------------------------------------------------- configuration


@dataclass(frozen=True, slots=True)
class Policy:
    """One rule. ``limit`` is the budget or threshold in the kind's own unit."""

    name: str
    kind: str
    action: str
    limit: float
    after_steps: int = 0
    granularity: str = "line"
    token_kinds: tuple[str, ...] = TOKEN_KINDS
    url: str | None = None
    signal: int = int(_signal.SIGTERM)
    description: str = ""


@dataclass(frozen=True, slots=True)
class WebhookConfig:
    url: str | None = None
    timeout: float = 5.0
    retries: int = 3
    backoff: float = 1.0
    queue_size: int = 1000


@dataclass(frozen=True, slots=True)
class AbortConfig:
    policies: tuple[Policy, ...]
    allow_signals: bool = False
    webhook: WebhookConfig = field(default_factory=WebhookConfig)
    source: str = "<config>"


def _toml_loads(text: str, where: str) -> dict:
    return toml_loads(text, where, AbortConfigError)


def load_policies(path: str | Path) -> AbortConfig:
    """Read and validate a policy file; raises AbortConfigError with a precise message."""
    text = read_text_file(path, "abort policies", AbortConfigError)
    return parse_policies(text, str(path))


def parse_policies(text: str, where: str = "<config>") -> AbortConfig:
    data = _toml_loads(text, where)
    unknown = set(data) - {"allow_signals", "webhook", "policy"}
    if unknown:
        raise AbortConfigError(f"{where}: unknown top-level key(s) {sorted(unknown)}; "
                               "expected allow_signals, [webhook], [[policy]]")
    allow = data.get("allow_signals", False)
    if not isinstance(allow, bool):
        raise AbortConfigError(f"{where}: allow_signals must be true or false")
    webhook = _webhook(data.get("webhook", {}), where)
    raw = data.get("policy", [])
    if not isinstance(raw, list) or not raw:
        raise AbortConfigError(f"{where}: no policies; add at least one [[policy]] table")
    policies = tuple(_policy(p, i, where, allow, webhook) for i, p in enumerate(raw, 1))
    names = Counter(p.name for p in policies)
    dup = [n for n, c in names.items() if c > 1]
    if dup:
        raise AbortConfigError(f"{where}: policy names must be unique; repeated: {dup}")
    return AbortConfig(policies, allow, webhook, where)


def _number(value: Any, what: str, *, minimum: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AbortConfigError(f"{what} must be a number, got {value!r}")
    if value < minimum:
        raise AbortConfigError(f"{what} must be >= {minimum:g}, got {value!r}")
    return float(value)


def _url(value: Any, what: str) -> str:
    if not isinstance(value, str) or not re.match(r"^https?://", value):
        raise AbortConfigError(f"{what} must be an http:// or https:// URL, got {value!r}")
    return value


def _webhook(raw: Any, where: str) -> WebhookConfig:
    if not isinstance(raw, dict):
        raise AbortConfigError(f"{where}: [webhook] must be a table")
    unknown = set(raw) - {"url", "timeout", "retries", "backoff", "queue_size"}
    if unknown:
        raise AbortConfigError(f"{where}: [webhook]: unknown key(s) {sorted(unknown)}")
    w = f"{where}: [webhook]"
    return WebhookConfig(
        url=_url(raw["url"], f"{w} url") if "url" in raw else None,
        timeout=_number(raw.get("timeout", 5.0), f"{w} timeout", minimum=0.001),
        retries=int(_number(raw.get("retries", 3), f"{w} retries")),
        backoff=_number(raw.get("backoff", 1.0), f"{w} backoff"),
        queue_size=int(_number(raw.get("queue_size", 1000), f"{w} queue_size", minimum=1)))


def _signal_number(value: Any, what: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        name = value.upper()
        name = name if name.startswith("SIG") else "SIG" + name
        sig = getattr(_signal.Signals, name, None)
        if sig is not None:
            return int(sig)
    raise AbortConfigError(f"{what} must be a signal name like \"SIGTERM\" or a number, got {value!r}")


def _policy(raw: Any, i: int, where: str, allow_signals: bool, webhook: WebhookConfig) -> Policy:
    if not isinstance(raw, dict):
        raise AbortConfigError(f"{where}: policy #{i} must be a table")
    name = raw.get("name", f"policy{i}")
    if not isinstance(name, str) or not _NAME.match(name):
        raise AbortConfigError(f"{where}: policy #{i}: name must be 1-64 of A-Z a-z 0-9 _ . : -, got {name!r}")
    what = f"{where}: policy {name!r}"
    kind = raw.get("kind")
    if kind not in KINDS:
        raise AbortConfigError(f"{what}: kind must be one of {sorted(KINDS)}, got {kind!r}")
    required, optional = KINDS[kind]
    unknown = set(raw) - set(COMMON_KEYS) - set(required) - set(optional)
    if unknown:
        raise AbortConfigError(f"{what} (kind {kind}): unknown key(s) {sorted(unknown)}; "
                               f"expected {sorted(set(required) | set(optional))}")
    missing = [k for k in required if k not in raw]
    if missing:
        raise AbortConfigError(f"{what} (kind {kind}): missing {missing}")
    action = raw.get("action", "file")
    if action not in ACTIONS:
        raise AbortConfigError(f"{what}: action must be one of {list(ACTIONS)}, got {action!r}")
    if action == "signal" and not allow_signals:
        raise AbortConfigError(f"{what}: action \"signal\" needs `allow_signals = true` at the "
                               "top of the file (signals stop processes: opt in explicitly)")
    url = _url(raw["url"], f"{what} url") if "url" in raw else webhook.url
    if action == "webhook" and url is None:
        raise AbortConfigError(f"{what}: action \"webhook\" needs a url (in the policy or [webhook])")
    opts = {**optional, **{k: raw[k] for k in optional if k in raw}}
    gran = opts.get("granularity", "line")
    if gran not in GRANULARITIES:
        raise AbortConfigError(f"{what}: granularity must be one of {list(GRANULARITIES)}, got {gran!r}")
    kinds = opts.get("kinds", list(TOKEN_KINDS))
    if not isinstance(kinds, list) or not kinds or any(k not in TOKEN_KINDS for k in kinds):
        raise AbortConfigError(f"{what}: kinds must be a non-empty list of {list(TOKEN_KINDS)}")
    limit = _number(raw[required[0]], f"{what} {required[0]}", minimum=MINIMUM.get(kind, 0.0))
    if kind in RATIO_KINDS and limit > 1:
        raise AbortConfigError(f"{what}: {required[0]} is a ratio between 0 and 1, got {limit:g}")
    description = raw.get("description", "")
    return Policy(
        name=name, kind=kind, action=action, limit=limit,
        after_steps=int(_number(opts.get("after_steps", 0), f"{what} after_steps")),
        granularity=gran, token_kinds=tuple(kinds), url=url,
        signal=_signal_number(raw.get("signal", "SIGTERM"), f"{what} signal"),
        description=description if isinstance(description, str) else "")


def format_policy(p: Policy) -> str:
    """The ``[[policy]]`` table ``parse_policies`` reads back as ``p`` (a tuned policy
    file is written with it: ``abort-backtest --tune``)."""
    required, optional = KINDS[p.kind]
    lines = ["[[policy]]", f"name = {json.dumps(p.name)}", f"kind = {json.dumps(p.kind)}",
             f"{required[0]} = {_toml_number(p.limit)}"]
    if "after_steps" in optional:
        lines.append(f"after_steps = {p.after_steps}")
    if "granularity" in optional:
        lines.append(f"granularity = {json.dumps(p.granularity)}")
    if "kinds" in optional and p.token_kinds != TOKEN_KINDS:
        lines.append(f"kinds = {json.dumps(list(p.token_kinds))}")
    lines.append(f"action = {json.dumps(p.action)}")
    if p.url is not None:
        lines.append(f"url = {json.dumps(p.url)}")
    if p.action == "signal":
        lines.append(f"signal = {p.signal}")
    if p.description:
        lines.append(f"description = {json.dumps(p.description)}")
    return "\n".join(lines) + "\n"


def _toml_number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


# ---------------------------------------------------------------------- decisions


@dataclass(slots=True)
class Decision:
    """One policy tripping for one run; ``outcome`` says what the action did."""

    policy: str
    kind: str
    action: str
    run_key: str
    run_id: str
    instance_id: str
    step: int
    value: float
    limit: float
    reason: str
    tokens: int = 0
    cost_usd: float | None = None
    decided_at: float | None = None
    trace: str | None = None
    dry_run: bool = False
    outcome: str = "pending"

    def to_json(self) -> dict:
        return asdict(self)
