"""What reads showed of an edited file since its last recorded edit, and the map it implies.

An edit nobody recorded (a script, a tool run elsewhere) changes a file's numbering in a
way only later reads reveal. Each read that shows current lines with known numbers is a
*window* of facts: current line ``c`` is base line ``b`` (or a line of the agent's). The
file's map is rebuilt from all windows seen since the last recorded edit:

- inside a window, the facts;
- between two known lines (c1 is b1, c2 is b2), the lines no read showed: the map before
  these reads (the *prior*) where it spans the stretch as the facts do, else the base
  lines between b1 and b2 in order, the extra current lines unknown at the end of the
  gap (a deletion when there are more base lines than current ones);
- before the first known line, the same with a virtual fact "line 0 is line 0";
- after the last known line, the base goes on; after the last window, the prior from
  the first base line not placed yet (or nothing, when a read showed the whole file).

So a shift seen at line 600 is not forgotten when a read at line 10 shows the insertion
that caused it, and nothing is counted twice. A recorded edit replays on the rebuilt map
and starts a new epoch (``Seen`` is dropped).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Seen", "Window", "rebuild"]


@dataclass(slots=True)
class Window:
    """Current lines ``first..first+len(ids)-1``: their base lines and shown text."""

    first: int
    ids: list[int | None]
    texts: list[str]

    @property
    def last(self) -> int:
        return self.first + len(self.ids) - 1


@dataclass(slots=True)
class Seen:
    """The prior map (runs and lines when the epoch began) and the windows since."""

    prior_runs: list[list]
    prior_lines: list[str]
    windows: list[Window] = field(default_factory=list)
    end: int | None = None       # a read showed the whole file: it ends here

    def add(self, w: Window, whole: bool) -> None:
        """A newer window wins over older facts about the same current lines."""
        kept: list[Window] = []
        for old in self.windows:
            if old.last < w.first or old.first > w.last:
                kept.append(old)
                continue
            if old.first < w.first:          # the part before the new window
                n = w.first - old.first
                kept.append(Window(old.first, old.ids[:n], old.texts[:n]))
            if old.last > w.last:            # the part after it
                n = w.last - old.first + 1
                kept.append(Window(w.last + 1, old.ids[n:], old.texts[n:]))
        kept.append(w)
        kept.sort(key=lambda x: x.first)
        self.windows = kept
        if whole:
            self.end = w.last
        elif self.end is not None and w.last > self.end:
            self.end = None


def _ids_of(runs: list[list]) -> list[int | None]:
    out: list[int | None] = []
    for length, base in runs:
        out.extend(range(base, base + length) if base is not None else [None] * length)
    return out


def rebuild(seen: Seen, base: list[str], placeholder) -> tuple[list[int | None], list[str]]:
    """(base id of every current line, current lines) from the prior and the windows."""
    prior_ids = _ids_of(seen.prior_runs)
    where = {b: pos for pos, b in enumerate(prior_ids) if b is not None}  # id -> prior index
    facts: dict[int, tuple[int | None, str]] = {}
    for w in seen.windows:
        for j, (b, t) in enumerate(zip(w.ids, w.texts)):
            facts[w.first + j] = (b, t)
    end = max(facts)
    known = [(c, facts[c][0]) for c in sorted(facts) if facts[c][0] is not None]

    def text_of(b: int | None) -> str:
        return base[b - 1] if b is not None and 0 < b <= len(base) else placeholder()

    ids: list[int | None] = [None] * end
    lines: list[str] = [""] * end
    for c, (b, t) in facts.items():
        ids[c - 1] = b
        lines[c - 1] = text_of(b) if b is not None else t + "\n"
    stops = [(0, 0), *known]
    for (c1, b1), (c2, b2) in zip(stops, stops[1:]):
        _fill(ids, lines, [c for c in range(c1 + 1, c2) if c not in facts], c1, b1, c2, b2,
              prior_ids, seen.prior_lines, where, text_of)
    c1, b1 = stops[-1]
    last = b1
    for c in range(c1 + 1, end + 1):    # after the last known line: the base goes on
        if c not in facts:
            last += 1
            ids[c - 1] = last if last <= len(base) else None
            lines[c - 1] = text_of(ids[c - 1])
    if seen.end is None:
        at = next((i for i, b in enumerate(prior_ids) if b is not None and b > last), None)
        if at is not None:
            ids.extend(prior_ids[at:])
            lines.extend(seen.prior_lines[at:])
    return ids, lines


def _fill(ids: list[int | None], lines: list[str], gap: list[int], c1: int, b1: int, c2: int,
          b2: int, prior_ids: list[int | None], prior_lines: list[str], where: dict[int, int],
          text_of) -> None:
    """The current lines ``gap`` no read showed, between known facts (c1, b1) and
    (c2, b2): the prior's where it spans the stretch as the facts do, else the base
    lines between in order, extra current lines unknown at the end."""
    if not gap:
        return
    p1 = where.get(b1) if b1 else -1
    p2 = where.get(b2)
    if p1 is not None and p2 is not None and p2 - p1 == c2 - c1:
        for c in gap:                   # the prior agrees on this stretch
            ids[c - 1] = prior_ids[p1 + c - c1]
            lines[c - 1] = prior_lines[p1 + c - c1]
        return
    room = b2 - b1 - 1                  # base lines between the two facts
    for k, c in enumerate(gap, 1):
        b = b1 + k if k <= room else None   # more current lines than base ones: inserted
        ids[c - 1] = b
        lines[c - 1] = text_of(b)
