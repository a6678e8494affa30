"""The metrics server's limits: a few handler threads, and a deadline per connection.

``ThreadingMixIn`` starts a thread per connection with no bound, and a client that
sends a byte a minute keeps its thread forever: a few hundred such clients (a
misconfigured scraper, a port scan) would exhaust the watcher's threads. Here at most
``MAX_HANDLERS`` connections are served at once, each socket operation times out
after ``SOCKET_TIMEOUT`` seconds, and a connection beyond the limit is closed at once
and counted.
"""

from __future__ import annotations

import logging
import threading
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

log = logging.getLogger(__name__)

#: connections served at once (a scrape is one; pushed hooks from many agents are many)
MAX_HANDLERS = 64
#: seconds a connection may be silent before it is dropped
SOCKET_TIMEOUT = 10.0


class BoundedServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    block_on_close = False
    #: the kernel's listen queue: socketserver's default of 5 makes the 6th of a burst
    #: of agents' hooks wait for a SYN retry (a second or more) before it is accepted
    request_queue_size = MAX_HANDLERS * 2

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.slots = threading.BoundedSemaphore(MAX_HANDLERS)
        #: connections closed because every handler was busy
        self.refused = 0

    def process_request(self, request, client_address):
        if not self.slots.acquire(blocking=False):
            self.refused += 1
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def handle_error(self, request, client_address):
        """A client that went away mid-request (a reset, a timeout) is its own business:
        no traceback on the watcher's stderr."""
        log.debug("metrics connection from %s ended with an error", client_address, exc_info=True)

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()


class QuietHandler(WSGIRequestHandler):
    timeout = SOCKET_TIMEOUT

    def log_message(self, format, *args):  # noqa: A002 (http.server's signature)
        pass
