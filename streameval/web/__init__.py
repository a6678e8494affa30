"""The page's static assets: one style sheet and small plain scripts.

They ship inside the package (no CDN: the page works offline and behind any firewall).
The live page (``live/page.py``) serves them as they are under the HTML shell of
``report/page_html.py``, which also inlines them into the one self-contained file of
``streameval view --html``. No third-party code: the charts are SVG drawn by
``curve.js`` and ``strips.js``.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

__all__ = ["SCRIPTS", "STYLES", "asset", "names"]

#: the scripts, in the order they must run (each adds to the ``SE`` namespace)
SCRIPTS: tuple[str, ...] = ("dom.js", "format.js", "source.js", "curve.js", "strips.js",
                            "calls.js", "columns.js", "fleet.js", "run.js", "app.js")
STYLES: tuple[str, ...] = ("app.css",)
_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}


def names() -> tuple[str, ...]:
    """Every asset the page may ask for (nothing else is served)."""
    return (*SCRIPTS, *STYLES)


@cache
def asset(name: str) -> tuple[bytes, str]:
    """(bytes, content type) of the asset ``name``; KeyError for any other name."""
    if name not in names():
        raise KeyError(name)
    data = resources.files(__name__).joinpath(name).read_bytes()
    return data, _TYPES[name[name.rindex("."):]]
