"""What a watcher keeps across a restart (its checkpoint), and what it reads again
when it starts: the runs a previous watcher was following, the records it wrote, the
decisions and run ids it gave (docs/operate.md, "Restarts").

A worker of ``watch --workers N`` keeps a checkpoint of its own (``part``), and reads
the checkpoints of another shape too (``foreign``: one watcher's, or a worker's past
the count), taking the traces that are its own now (``live.shard``): so a change of
``--workers`` between two starts loses no record owed and writes none twice.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from streameval.fileio import write_atomic
from streameval.live.outputs import checkpoint_bytes, read_checkpoint

log = logging.getLogger("streameval.live.watch")


def part(checkpoint: Path, index: int) -> Path:
    """Worker ``index``'s checkpoint, beside the one a single watcher keeps."""
    return Path(f"{checkpoint}.w{index}")


def foreign(checkpoint: Path, workers: int) -> list[Path]:
    """The checkpoints none of ``workers`` workers keeps (one watcher's, and those of
    workers past the count): read by each worker at its start, for its own traces."""
    parts = [p for p in checkpoint.parent.glob(f"{checkpoint.name}.w*")
             if p.name[len(checkpoint.name) + 2:].isdigit()
             and int(p.name[len(checkpoint.name) + 2:]) >= workers]
    return [checkpoint, *sorted(parts)]


def save(w: Any) -> None:
    """Each trace followed (its position, the records written), and the journals."""
    if not w.cfg.checkpoint:
        return
    files = {str(path): {**f.tail.position(), "written": f.written,
                         **({"named": str(f.key_path)} if f.key_path != path else {})}
             for path, f in w.followers.items()}
    try:
        write_atomic(w.cfg.checkpoint, checkpoint_bytes(w.cfg.root, files, {
            name: save() for name, (save, _load) in w.journals.items()}))
    except OSError as exc:
        # the previous checkpoint stays whole; a restart re-reads a little more
        w.table.stats.output_errors["checkpoint"] += 1
        log.error("cannot save the checkpoint %s (%s); kept the previous one",
                  w.cfg.checkpoint, exc)
        return
    w.claims.saved()   # every claim is in the checkpoint now


def restore(w: Any, later: list | None = None) -> int:
    """Resume the runs a previous watcher was following; returns how many files. Each
    is read again at once, or, given ``later``, put there to be read (``read_again``)."""
    w.out_digests.read_out(w.cfg.out)
    cp = w.cfg.checkpoint
    if not cp:
        return 0
    n = 0
    for source in [cp, *w.foreign]:
        own = source == cp
        saved = read_checkpoint(source, w.cfg.root)
        for name, (_save, load) in w.journals.items():
            if name in saved.journals:
                load(saved.journals[name])
        if own:
            # every run id given before the crash is known before any trace asks again
            w.claims.read_since()
        for path, pos in saved.files.items():
            if path in w.followers:
                continue   # in this worker's own checkpoint too
            try:
                st = path.stat()
            except OSError:
                continue
            if w.shard is not None and not (w.shard.hold(path) if own else w.shard.take(path)):
                continue   # another worker's
            f = w.follow(path, named=pos.get("named"))
            if st.st_ino == pos["inode"]:
                f.written = pos["written"]
            if later is None:
                read_again(w, [f])
            else:
                later.append(f)
            n += 1
    w.table.stats.events["restored"] += n
    return n


def read_again(w: Any, followers: list) -> None:
    """Read restored traces again from their first byte, their lines not counted anew."""
    for f in followers:
        f.restoring = True
        f.poll()
        f.restoring = False
        w.narration.lines_restored += f.lines_counted
