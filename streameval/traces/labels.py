"""A run's experiment and labels: from ``meta.json``, the trace's path, the command line.

Users run evaluations to choose (this model or that one, with or without an
``AGENTS.md``), so each run says which arm of which experiment it belongs to, and
``streameval compare --by experiment`` or ``--by label:K`` can split a batch by it
(docs/compare.md). Three sources, the later overriding the earlier key by key:

1. ``meta.json`` beside the trace: ``"experiment": "..."`` and ``"labels": {"k": "v"}``;
2. ``--label-from-path TEMPLATE``: ``{name}`` parts of the template taken from the
   trace's path (``runs/{experiment}/{instance}``);
3. ``--label key=value`` (repeatable), for every run of the command.

``experiment`` is a field of its own (records, CSV, ``--by experiment``); every other
key is a label.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import PurePath

from streameval.model import RunIdentity

__all__ = ["EXPERIMENT", "LabelError", "LabelRules", "PathTemplate", "labels_of", "parse_label"]

#: the key that names the experiment rather than a label
EXPERIMENT = "experiment"
#: label keys: a letter or ``_``, then letters, digits, ``_``, ``.`` or ``-``
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
#: a label value is kept whole up to this length (longer ones are cut, never dropped)
MAX_VALUE = 200


class LabelError(ValueError):
    """A ``--label`` or ``--label-from-path`` that cannot be used; the message says why."""


def parse_label(text: str) -> tuple[str, str]:
    """``key=value`` -> ``(key, value)``; raises LabelError naming what is wrong."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not _KEY.match(key):
        raise LabelError(f"--label wants key=value with a key of letters, digits, _ . -, "
                         f"got {text!r}")
    return key, value.strip()[:MAX_VALUE]


def labels_of(value: object) -> dict[str, str]:
    """``meta.json``'s ``labels`` object as ``{key: text}``: keys that are not label
    keys and values that are not scalars are left out (a label is text)."""
    if not isinstance(value, Mapping):
        return {}
    out: dict[str, str] = {}
    for k, v in value.items():
        if isinstance(k, str) and _KEY.match(k) and isinstance(v, (str, int, float, bool)):
            out[k] = str(v)[:MAX_VALUE]
    return out


class PathTemplate:
    """``runs/{experiment}/{instance}``: each ``/``-separated part matches one component
    of a path; ``{name}`` takes any text (not ``/``) as the label ``name``, ``*`` any
    text, the rest is literal.

    The template is matched against the last components of the trace's directory, and
    when that fails, against the last components of its path with the file name
    (``runs/{experiment}/{instance}.traj.json``), so it works on relative and absolute
    paths alike.
    """

    def __init__(self, template: str):
        parts = [p for p in template.strip().strip("/").split("/") if p]
        if not parts:
            raise LabelError("--label-from-path wants a template such as "
                             f"'runs/{{experiment}}/{{instance}}', got {template!r}")
        self.template = template
        self.names: list[str] = []
        self._parts = [self._compile(p) for p in parts]
        if not self.names:
            raise LabelError(f"--label-from-path {template!r} names no {{label}}")

    def _compile(self, part: str) -> re.Pattern[str]:
        out, pos = [], 0
        for m in _PLACEHOLDER.finditer(part):
            out.append(_literal(part[pos:m.start()]))
            name = m.group(1)
            if not _KEY.match(name):
                raise LabelError(f"--label-from-path: {{{name}}} is not a label name "
                                 "(letters, digits, _ . -)")
            if name in self.names:
                raise LabelError(f"--label-from-path: {{{name}}} appears twice")
            self.names.append(name)
            out.append(f"(?P<{_group(name)}>.+?)")
            pos = m.end()
        out.append(_literal(part[pos:]))
        return re.compile("^" + "".join(out) + "$")

    def match(self, path: str | PurePath) -> dict[str, str] | None:
        """The labels the template takes from ``path``; None when it does not match."""
        parts = PurePath(path).parts
        for candidate in (parts[:-1], parts):
            got = self._match_tail(candidate)
            if got is not None:
                return got
        return None

    def _match_tail(self, parts: Sequence[str]) -> dict[str, str] | None:
        n = len(self._parts)
        if len(parts) < n:
            return None
        found: dict[str, str] = {}
        for pattern, part in zip(self._parts, parts[len(parts) - n:]):
            m = pattern.match(part)
            if m is None:
                return None
            found.update((name, m.group(_group(name))[:MAX_VALUE]) for name in self.names
                         if _group(name) in m.groupdict())
        return found


def _literal(text: str) -> str:
    return ".*".join(re.escape(piece) for piece in text.split("*"))


def _group(name: str) -> str:
    """A regex group name for a label key (which may hold ``.`` and ``-``)."""
    return "g" + name.encode().hex()


@dataclass(frozen=True, slots=True)
class LabelRules:
    """The command's ``--label`` pairs and ``--label-from-path`` template, applied to each
    run's identity after ``meta.json`` (``apply``)."""

    fixed: Mapping[str, str] = field(default_factory=dict)
    path: PathTemplate | None = None

    @classmethod
    def from_options(cls, labels: Sequence[str] | None, template: str | None) -> LabelRules:
        """Raises LabelError for a pair or template that cannot be used."""
        fixed = dict(parse_label(t) for t in labels or ())
        return cls(fixed, PathTemplate(template) if template else None)

    def __bool__(self) -> bool:
        return bool(self.fixed) or self.path is not None

    def apply(self, identity: RunIdentity, trace: str | PurePath | None) -> RunIdentity:
        """``identity`` with the path's labels, then the command line's, laid over the
        ones ``meta.json`` gave (key by key; ``experiment`` sets the experiment)."""
        if not self:
            return identity
        found: dict[str, str] = {}
        if self.path is not None and trace is not None:
            found.update(self.path.match(trace) or {})
        found.update(self.fixed)
        if not found:
            return identity
        labels = dict(identity.run_labels)
        experiment = identity.experiment
        for key, value in found.items():
            if key == EXPERIMENT:
                experiment = value
            else:
                labels[key] = value
        return replace(identity, experiment=experiment,
                       run_labels=dict(sorted(labels.items())))
