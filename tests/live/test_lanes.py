"""live/lanes.py: a lane's threads hand results, exceptions and cancellations back to
the event loop; a closed lane runs nothing more."""

from __future__ import annotations

import asyncio
import threading

import pytest

from streameval.live.lanes import Lane


def test_results_and_exceptions_come_back_to_the_loop_from_the_lanes_threads():
    lane = Lane(3, "t")

    async def main():
        loop_thread = threading.get_ident()
        got = await asyncio.gather(*(lane.run(lambda i=i: (i * i, threading.get_ident()))
                                     for i in range(50)))
        assert [v for v, _ in got] == [i * i for i in range(50)]
        assert all(t != loop_thread for _, t in got)
        assert 1 <= len({t for _, t in got}) <= 3
        with pytest.raises(ZeroDivisionError):
            await lane.run(lambda: 1 / 0)

    asyncio.run(main())
    lane.close()


def test_close_cancels_what_is_queued_and_runs_nothing_more():
    lane = Lane(1, "t")
    started, gate, ran = threading.Event(), threading.Event(), []

    def running() -> bool:
        started.set()
        return gate.wait(10)

    async def main():
        first = lane.run(running)
        queued = lane.run(ran.append, "queued")
        while not started.is_set():   # noqa: ASYNC110 - the lane's thread took the first
            await asyncio.sleep(0.01)
        threading.Thread(target=lane.close, daemon=True).start()
        while not lane._closed:   # noqa: ASYNC110 - close runs in its own thread
            await asyncio.sleep(0.01)
        gate.set()
        assert await first is True       # the call running ends
        with pytest.raises(asyncio.CancelledError):
            await queued
        later = lane.run(ran.append, "later")
        assert later.cancelled()

    asyncio.run(main())
    assert ran == []


def test_a_request_that_gave_up_leaves_its_result_unset():
    lane = Lane(1, "t")
    gate = threading.Event()

    async def main():
        fut = lane.run(gate.wait, 10)
        fut.cancel()                      # the client went away
        gate.set()
        again = await lane.run(lambda: "next")   # the thread goes on with the next
        assert again == "next" and fut.cancelled()

    asyncio.run(main())
    lane.close()
