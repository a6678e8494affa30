"""FileTail: whole lines only; truncation and replacement are noticed."""

import os

from streameval.traces.tail import FileTail


def test_partial_last_line_is_held_back_until_its_newline(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(b'{"a": 1}\n{"b":')
    t = FileTail(p)
    b = t.poll()
    assert b.lines == [(b'{"a": 1}', 1)]
    assert t.pending == len(b'{"b":')
    with open(p, "ab") as fh:
        fh.write(b' 2}\n')
    b = t.poll()
    assert b.lines == [(b'{"b": 2}', 2)]
    assert t.pending == 0


def test_line_written_in_many_pieces(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"")
    t = FileTail(p)
    got = []
    for piece in (b"ab", b"cd", b"e\nf", b"g", b"\r\n"):
        with open(p, "ab") as fh:
            fh.write(piece)
        got += t.poll().lines
    assert got == [(b"abcde", 1), (b"fg", 2)]


def test_truncation_restarts_from_the_beginning(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"one\ntwo\n")
    t = FileTail(p)
    assert len(t.poll().lines) == 2
    with open(p, "r+b") as fh:   # same inode, shorter content
        fh.truncate(0)
        fh.write(b"x\n")
    b = t.poll()
    assert b.status == "truncated"
    assert b.lines == [(b"x", 1)]


def test_replacement_by_a_new_inode(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"one\ntwo\nthree\n")
    t = FileTail(p)
    t.poll()
    tmp = tmp_path / "new"
    tmp.write_bytes(b"fresh\nfile-longer-than-before\nline\nmore\n")
    os.replace(tmp, p)
    b = t.poll()
    assert b.status == "replaced"
    assert [ln for ln, _ in b.lines][:2] == [b"fresh", b"file-longer-than-before"]
    assert b.lines[0][1] == 1


def test_missing_file(tmp_path):
    t = FileTail(tmp_path / "nope")
    assert t.poll().status == "missing"


def test_huge_line_is_skipped_and_reported_neighbours_kept(tmp_path):
    p = tmp_path / "t.jsonl"
    big = b"x" * 5000
    p.write_bytes(b"a\n" + big + b"\nb\n")
    t = FileTail(p, max_line=1000)
    b = t.poll()
    assert b.lines == [(b"a", 1), (b"b", 3)]
    assert b.too_long == [2]


def test_huge_line_arriving_in_pieces(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"a\n")
    t = FileTail(p, max_line=100)
    t.poll()
    for _ in range(5):
        with open(p, "ab") as fh:
            fh.write(b"y" * 60)
        assert t.poll().lines == []
    with open(p, "ab") as fh:
        fh.write(b"\nok\n")
    b = t.poll()
    assert b.lines == [(b"ok", 3)]
    assert b.too_long == [2]


def test_final_poll_returns_unterminated_last_line(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"a\nb")
    t = FileTail(p)
    assert t.poll().lines == [(b"a", 1)]
    assert t.poll(final=True).lines == [(b"b", 2)]


def test_position_excludes_partial_line(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"abc\nde")
    t = FileTail(p)
    t.poll()
    pos = t.position()
    assert pos["offset"] == 4 and pos["lineno"] == 1 and pos["inode"] == os.stat(p).st_ino


def test_backlog_is_what_a_bounded_poll_left_unread(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"x" * 100 + b"\n" + b"y" * (3 << 20) + b"\n")
    t = FileTail(p)
    b = t.poll(max_bytes=1)   # one READ_CHUNK, then stop
    assert b.more and t.backlog == p.stat().st_size - t.offset > 0
    while t.poll(max_bytes=1).more:
        pass
    assert t.backlog == 0


def test_a_file_replaced_by_a_directory_is_missing_not_an_error(tmp_path):
    """102ce86 raised IsADirectoryError out of ``poll`` (and out of the watcher, which
    exited: anyone who writes in the watched folder could stop it so)."""
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"one\ntwo\n")
    t = FileTail(p)
    assert len(t.poll().lines) == 2
    p.unlink()
    p.mkdir()               # often given the inode the file just freed
    (p / "x").write_bytes(b"y\n")
    assert t.poll().status == "missing"
    t.reset()
    assert t.poll().status == "missing"


def test_read_regular_neither_blocks_on_a_fifo_nor_reads_what_admit_refuses(tmp_path):
    """A conversation's event file swapped for a FIFO between the listing and the read
    hung 102ce86's watcher in ``read_bytes`` (a blocking open, waiting for a writer)."""
    from streameval.traces.tail import read_regular

    fifo = tmp_path / "event-00001-x.json"
    os.mkfifo(fifo)
    assert read_regular(fifo) is None
    plain = tmp_path / "event-00002-y.json"
    plain.write_bytes(b"{}")
    assert read_regular(plain) == b"{}"
    assert read_regular(plain, admit=lambda fd, path: False) is None


def test_same_size_save_that_changed_only_the_middle_is_a_rewrite_and_a_touch_is_not(tmp_path):
    """Past both anchors only the checksum of every byte read tells the two apart."""
    from streameval.traces.tail import ANCHOR

    p = tmp_path / "t.jsonl"
    lines = [b"line %05d" % i for i in range(3 * ANCHOR // 10)]
    p.write_bytes(b"\n".join(lines) + b"\n")
    t = FileTail(p)
    assert len(t.poll().lines) == len(lines)
    st = p.stat()
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))   # a touch
    assert t.poll().status == "ok"
    middle = len(lines) // 2
    changed = lines[:middle] + [b"LINE %05d" % middle] + lines[middle + 1:]
    with open(p, "r+b") as fh:   # saved again in place, same size, new bytes mid-file
        fh.write(b"\n".join(changed) + b"\n")
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
    b = t.poll()
    assert b.status == "rewritten"
    assert b.lines[middle] == (b"LINE %05d" % middle, middle + 1)
