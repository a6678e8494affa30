"""The patches of a SWE-bench predictions file (``watch --predictions``): each line's
``model_patch`` lands on the runs of its ``instance_id``, those in memory now and those
that start later (their follower looks it up), as lines are appended."""

from __future__ import annotations

import logging
from pathlib import Path

import orjson

from streameval.errors import Reason
from streameval.traces.tail import FileTail

log = logging.getLogger("streameval.live.watch")


class Predictions:
    """``path``'s patches by instance (``patches``, shared with the followers)."""

    def __init__(self, path: Path | None):
        self.path = path
        self.patches: dict[str, str] = {}
        self._tail: FileTail | None = None

    def poll(self, table, narration) -> None:
        """Read what was appended; land each new patch on ``table``'s runs."""
        if self.path is None:
            return
        if self._tail is None:
            self._tail = FileTail(self.path)
        for line, lineno in self._tail.poll().lines:
            try:
                obj = orjson.loads(line)
                iid, patch = obj["instance_id"], obj.get("model_patch")
            except (orjson.JSONDecodeError, KeyError, TypeError):
                table.stats.bad_lines[Reason.BAD_PREDICTION.value] += 1
                log.warning("%s:%d: not a prediction record", self.path, lineno)
                continue
            if not isinstance(iid, str) or not isinstance(patch, str):
                continue
            self.patches[iid] = patch
            with table.lock:
                for run in list(table.runs.values()):
                    if run.session.identity.instance_id == iid and \
                            run.session.set_patch(patch, "predictions"):
                        narration.patch_landed(run.session, run.key, "predictions file")
                        table.stats.events["patch_landed"] += 1
