"""Values from traces and requests, shown safely (issue 27): a label as f53415f cut it,
a log line that no value can break in two or fill with an escape sequence, and the
lines of refused requests a few per period with a count of the rest."""

from __future__ import annotations

import hashlib
import logging

from hypothesis import given
from hypothesis import strategies as st

from streameval.live.exporter import MAX_LABEL, label_value
from streameval.untrusted import LOGGED, LogThrottle, SafeFormatter, bounded, escaped


def _label_of_f53415f(value: str) -> str:
    """``exporter.label_value`` as f53415f wrote it: the reference."""
    if len(value) <= MAX_LABEL and value.isprintable():
        return value
    clean = "".join(ch if ch.isprintable() else "?" for ch in value[:MAX_LABEL * 2])
    if len(value) <= MAX_LABEL:
        return clean
    digest = hashlib.sha1(value.encode("utf-8", "replace")).hexdigest()[:10]
    return f"{clean[:MAX_LABEL - 12]}~{digest}"


TEXT = st.text(st.characters(codec="utf-8"), max_size=600) | \
    st.text(st.sampled_from("a\x1b\n\x07\u202e\x00\ufffe"), min_size=150, max_size=450)


@given(TEXT)
def test_labels_are_cut_as_before(value):
    assert label_value(value) == _label_of_f53415f(value)


@given(TEXT, st.integers(20, 300))
def test_a_bounded_value_is_printable_and_cut_to_its_limit(value, limit):
    for mark in (None, escaped):
        out = bounded(value, limit) if mark is None else bounded(value, limit, mark)
        assert out.isprintable()
        if len(value) > limit:
            assert len(out) <= limit
            assert out.endswith(hashlib.sha1(value.encode("utf-8", "replace")).hexdigest()[:10])
        elif value.isprintable():
            assert out == value


def _formatted(msg, *args, exc=False) -> str:
    record = logging.LogRecord("streameval.watch", logging.INFO, __file__, 1, msg, args,
                               None)
    if exc:
        try:
            raise ValueError("bad \x1b[31m value\nforged")
        except ValueError:
            import sys

            record.exc_info = sys.exc_info()
    return SafeFormatter("%(levelname)s %(name)s: %(message)s").format(record)


def test_a_logged_value_cannot_forge_a_line_or_write_an_escape():
    """f53415f logged a request's decoded path and a meta.json run id as they were."""
    forged = "/v1/\x1b]0;X\x07\n2026 INFO streameval.watch: all good"
    line = _formatted("ingest %s %s: %d %s", "POST", forged, 401, "no token")
    assert "\n" not in line and "\x1b" not in line and "\x07" not in line
    assert line == ("INFO streameval.watch: ingest POST /v1/\\x1b]0;X\\x07\\n2026 INFO "
                    "streameval.watch: all good: 401 no token")
    assert _formatted("run %s", "\u202eevil") == "INFO streameval.watch: run \\u202eevil"
    # a message that is a value itself, and an object's text
    assert "\n" not in _formatted("a\nb") and "\n" not in _formatted("%s", ValueError("a\nb"))


def test_a_long_logged_value_is_cut_with_a_hash():
    """f53415f logged a 100 KB run id in full."""
    run_id = "r" * 100_000
    line = _formatted("run %s started", run_id)
    digest = hashlib.sha1(run_id.encode()).hexdigest()[:10]
    assert len(line) < LOGGED + 100 and f"~{digest} started" in line


def test_numbers_and_tracebacks_keep_their_form():
    assert _formatted("%d calls, %.2f", 3, 0.5) == "INFO streameval.watch: 3 calls, 0.50"
    text = _formatted("failed", exc=True)
    assert "Traceback" in text and "\x1b" not in text and "ValueError: bad \\x1b[31m" in text


def test_an_exception_message_cannot_add_a_line_to_its_traceback():
    """102ce86 kept a message's line breaks as the traceback's: ``ValueError(f"... {v}")``
    with a value from a trace or a request wrote lines of its choosing into the log."""
    import sys

    record = logging.LogRecord("streameval.watch", logging.ERROR, __file__, 1, "failed", (), None)
    try:
        try:
            raise KeyError("inner")
        except KeyError as inner:
            raise ValueError("bad value\n2026 INFO streameval.watch: all good") from inner
    except ValueError:
        record.exc_info = sys.exc_info()
    text = SafeFormatter("%(levelname)s %(name)s: %(message)s").format(record)
    lines = text.split("\n")
    assert not any(line.startswith("2026 INFO") for line in lines)
    assert "ValueError: bad value\\n2026 INFO streameval.watch: all good" in lines
    assert "KeyError: 'inner'" in lines and lines[0] == "ERROR streameval.watch: failed"


def test_refused_lines_are_a_few_a_period_and_the_rest_counted(caplog):
    """f53415f wrote a line per refused request: 2,000 requests, 2,000 lines in 0.9 s."""
    now = [0.0]
    throttle = LogThrottle(logging.getLogger("streameval.test"), "refused requests",
                           lines=10, every=10.0, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, "streameval.test"):
        for i in range(2000):
            throttle.log(logging.WARNING, 404 if i % 2 else 401, "refused %d", i)
        assert len(caplog.records) == 10
        throttle.flush()
        assert len(caplog.records) == 10   # the period is not over
        now[0] = 10.5
        throttle.flush()
        assert len(caplog.records) == 11
        assert caplog.records[-1].getMessage() == (
            "1990 more refused requests not logged in the last 10 s (401: 995, 404: 995)")
        throttle.log(logging.WARNING, 401, "refused again")   # a new period
        assert caplog.records[-1].getMessage() == "refused again"
