"""The page's HTML: the shell the live page serves, and the one self-contained file of
``streameval view --html`` (the same scripts and data, inlined, opening from disk).

Both carry a strict Content-Security-Policy. Live: scripts, styles and requests from
the page's own origin only. The file: only the one inline script and style sheet whose
hashes it names, and no requests at all. Both require Trusted Types, so an HTML sink
(``innerHTML`` and the like) throws instead of parsing a value from a trace; the scripts
never use one (``web/dom.js``).
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import orjson

from streameval import __version__
from streameval.web import SCRIPTS, STYLES, asset

__all__ = ["CSP_LIVE", "file_csp", "self_contained", "shell"]

_COMMON = ("default-src 'none'; base-uri 'none'; form-action 'none'; "
           "require-trusted-types-for 'script'; trusted-types 'none'")
#: the live page's policy (a response header; ``frame-ancestors`` works only there)
CSP_LIVE = (f"{_COMMON}; script-src 'self'; style-src 'self'; img-src 'self'; "
            "connect-src 'self'; frame-ancestors 'none'")

_BODY = ('<header id="top"><a id="home" href="/">streameval</a>'
         '<span id="status" role="status"></span></header>\n'
         '<main id="main"><noscript>This page needs JavaScript; its data is at '
         '/api/runs.</noscript></main>\n')


def _head(title: str) -> str:
    return ('<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f'<meta name="referrer" content="no-referrer">\n<title>{title}</title>\n')


def shell() -> bytes:
    """The live page's HTML: the assets by URL, in order; no inline script or style."""
    links = "".join(f'<link rel="stylesheet" href="/static/{name}">\n' for name in STYLES)
    scripts = "".join(f'<script src="/static/{name}" defer></script>\n' for name in SCRIPTS)
    return (_head("streameval") + links + scripts + "</head>\n<body>\n" + _BODY
            + "</body>\n</html>\n").encode()


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def file_csp(script: str, style: str) -> str:
    """The file's policy: its one script and one style sheet by hash, nothing else."""
    return f"{_COMMON}; script-src {_sha256(script)}; style-src {_sha256(style)}; connect-src 'none'"


def _json_in_script(value: Any) -> str:
    """JSON safe inside ``<script type="application/json">``: no ``<`` can close it."""
    return orjson.dumps(value).decode().replace("<", "\\u003c")


def self_contained(data: dict[str, Any], title: str = "streameval: recorded runs") -> str:
    """One HTML file showing ``data`` ({"fleet": ..., "runs": [[id, detail], ...]}) with
    no server: the scripts and style inlined, the data in a JSON block never run."""
    script = "\n".join(asset(name)[0].decode() for name in SCRIPTS)
    style = "\n".join(asset(name)[0].decode() for name in STYLES)
    safe_title = title.replace("&", "&amp;").replace("<", "&lt;")
    return (_head(safe_title)
            + f'<meta http-equiv="Content-Security-Policy" content="{file_csp(script, style)}">\n'
            + f'<meta name="generator" content="streameval {__version__}">\n'
            + f"<style>{style}</style>\n</head>\n<body>\n"
            + _BODY.replace('href="/"', 'href="#/"')
            + f'<script type="application/json" id="se-data">{_json_in_script(data)}</script>\n'
            + f"<script>{script}</script>\n</body>\n</html>\n")
