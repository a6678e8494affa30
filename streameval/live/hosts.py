"""Which ``Host`` a server answers: one rule for every path, from the address it bound.

A web page a user opens can make the browser send requests to ``127.0.0.1``: with DNS
rebinding (``evil.example`` resolving to 127.0.0.1 after the page loaded) it can even
read the answers, since they are then same-origin to the page. The browser still says
which name it asked for, in ``Host``. So a server bound to a loopback address answers
only requests whose ``Host`` is a loopback name (``localhost``, ``127.0.0.1`` and every
spelling of ``127.0.0.0/8``, ``[::1]``), on every path: ``/metrics``, the page and its
API, ``/v1``. The rule is decided from the address the socket really bound, not from
how ``--host`` spelt it (``127.1`` is loopback too). A server bound elsewhere cannot
know its names and answers any; one on a Unix socket (the watcher behind its front) is
reached through the front, which checked. A request without ``Host`` is not a
browser's and is answered; two ``Host`` headers are a 400 (which one would count?).
"""

from __future__ import annotations

import functools
import ipaddress
import re
import socket

__all__ = ["HostRule", "host_name", "is_loopback"]

#: what ``inet_aton`` may be given: the dotted, short and hex spellings of an IPv4
#: address (glibc's takes anything after a space)
_IPV4_ANY = re.compile(r"[0-9A-Fa-fXx.]{1,40}")


@functools.lru_cache(maxsize=64)
def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address in any spelling (``127.0.0.0/8``, ``127.1``,
    ``::1``, ``[::1]``, an IPv4-mapped loopback). Remembered for the last 64 names: every
    request's Host is asked, and parsing an address was 4% of the front's time under
    hooks (a client sending a new name each time only pushes the others out)."""
    name = host.strip().lower()
    if name in ("localhost", "localhost."):
        return True
    name = name[1:-1] if name.startswith("[") and name.endswith("]") else name
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        if not _IPV4_ANY.fullmatch(name):
            return False
        try:
            address = ipaddress.ip_address(socket.inet_aton(name))
        except OSError:
            return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def host_name(header: str) -> str:
    """The name of a ``Host`` header, without its port (``[::1]:9108`` -> ``[::1]``). A
    header that is not a name and a port of digits is given back whole (no loopback
    name: ``[::1]evil.example`` is not ``[::1]``)."""
    if header.startswith("["):
        name, bracket, port = header.partition("]")
        name += bracket
    elif header.count(":") == 1:
        name, _, port = header.partition(":")
        port = ":" + port
    else:
        return header
    digits = port[1:]   # may be empty (RFC 3986)
    return name if not port or port[:1] == ":" and (not digits or digits.isascii()
                                                    and digits.isdigit()) else header


class HostRule:
    """The rule of one server: ``loopback_only`` when its socket is bound to loopback."""

    def __init__(self, loopback_only: bool):
        self.loopback_only = loopback_only

    @classmethod
    def of(cls, sock: socket.socket) -> HostRule:
        """The rule for a server on ``sock`` (its address as bound)."""
        if sock.family not in (socket.AF_INET, socket.AF_INET6):
            return cls(False)   # a Unix socket: behind the front, which checked
        return cls(is_loopback(sock.getsockname()[0]))

    def refusal(self, headers: list[tuple[bytes, bytes]]) -> tuple[int, str, str] | None:
        """None when a request with ``headers`` (lower-case names, as the server gives
        them) is answered; else (status, message, counter reason)."""
        hosts = [v for k, v in headers if k == b"host"]
        if len(hosts) > 1:
            return 400, "more than one Host header", "duplicate_host"
        if self.loopback_only and hosts and \
                not is_loopback(host_name(hosts[0].decode("latin-1"))):
            return 403, "this server answers loopback host names only", "host"
        return None
