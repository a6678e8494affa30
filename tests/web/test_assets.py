"""The page's scripts stay small, plain and free of HTML sinks: every value reaches the
page as text (``dom.js``), and the Content-Security-Policy would refuse the rest anyway.
These checks need no browser."""

from __future__ import annotations

import re
from pathlib import Path

from streameval.web import SCRIPTS, STYLES, asset, names

WEB = Path(__file__).resolve().parents[2] / "streameval" / "web"
#: the sinks that parse HTML or run text as code
SINKS = re.compile(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|"
                   r"new Function|setTimeout\(\s*[\"'`]|srcdoc|\.src\s*=|\.href\s*=")


def test_every_asset_is_listed_and_every_listed_asset_ships():
    on_disk = {p.name for p in WEB.iterdir() if p.suffix in (".js", ".css")}
    assert on_disk == set(names()) == set(SCRIPTS) | set(STYLES)
    assert SCRIPTS[0] == "dom.js" and SCRIPTS[-1] == "app.js"


def test_scripts_are_small_and_use_no_html_sink():
    for name in SCRIPTS:
        text = asset(name)[0].decode()
        assert len(text.splitlines()) <= 250, name
        assert text.count('"use strict";') == 1, name
        code = re.sub(r"^\s*//.*$", "", text, flags=re.M)   # the comments may name them
        assert not SINKS.search(code), (name, SINKS.search(code).group(0))
        assert "</script" not in text.lower(), name   # safe to inline in the --html file
    # links are set in one place, from the page's own routes
    setters = [n for n in SCRIPTS if 'setAttribute("href"' in asset(n)[0].decode()]
    assert setters == ["dom.js", "app.js"]


def test_no_asset_names_another_origin():
    for name in names():
        assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", asset(name)[0].decode()), name
