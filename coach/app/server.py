"""The HTTP side of the local dashboard: who may talk to it, what a page may do, and compression.

- Host check: a request whose ``Host`` header is not one of the names the server answers to is
  refused (400), so a web page that rebinds its own domain name to 127.0.0.1 cannot read the
  dashboard (DNS rebinding). Loopback names are allowed by default; ``coach dash --host`` adds its
  address, and a wildcard address (0.0.0.0) allows any name.
- Headers: the dashboard may not be framed by another site (``frame-ancestors 'none'``,
  ``X-Frame-Options: DENY``); scripts, styles, images and requests come from the server itself
  (Dash's renderer needs inline scripts and plotly inline styles); types are not sniffed.
- Compression: text responses (HTML, JSON, JavaScript, CSS) over ``MIN_BYTES`` are gzipped when the
  browser accepts it. Dash's bundles are fingerprinted and never change while the server runs, so
  each is compressed once and kept.
- Unused bundles: the page does not load the chunks of components no page uses (MathJax alone is
  2 MB); should one be needed after all, the renderer fetches it on demand.
"""

from __future__ import annotations

import gzip
import threading
from typing import Iterable

import flask

#: Responses smaller than this are sent as they are: compressing them saves less than it costs.
MIN_BYTES = 1024
#: gzip level: 6 is zlib's default, most of the gain for a fraction of level 9's time.
LEVEL = 6
COMPRESSIBLE = ("text/", "application/json", "application/javascript", "application/x-javascript",
                "image/svg+xml")
#: Component chunks that the page loads eagerly but no coach page uses.
UNUSED_CHUNKS = ("async-mathjax", "async-datepicker", "async-slider", "dash_table/async-export")

LOOPBACK = ("127.0.0.1", "localhost", "::1")
WILDCARD = ("0.0.0.0", "::", "")

CSP = "; ".join((
    "default-src 'self'",
    "script-src 'self' 'unsafe-inline' 'unsafe-eval'",  # the renderer's inline config; plotly compiles some code
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
))
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    # same-origin keeps the Referer on the page's own requests, which the layout reads
    "Referrer-Policy": "same-origin",
}


def allowed_hosts(bind: str | None) -> frozenset[str] | None:
    """Host names the server answers to when listening on ``bind``; None for any (a wildcard bind)."""
    if bind is not None and bind.strip("[]") in WILDCARD:
        return None
    names = set(LOOPBACK)
    if bind:
        names.add(bind.strip("[]").lower())
    return frozenset(names)


def _host_name(host: str) -> str:
    """``"127.0.0.1:8050"`` -> ``"127.0.0.1"``; ``"[::1]:8050"`` -> ``"::1"``."""
    h = host.strip().lower()
    if h.startswith("["):
        return h[1:h.find("]")] if "]" in h else h
    return h.rsplit(":", 1)[0] if h.count(":") == 1 else h


def strip_unused(scripts: str, unused: Iterable[str] = UNUSED_CHUNKS) -> str:
    """The page's script tags without those of the chunks in ``unused``."""
    return "\n".join(line for line in scripts.split("\n") if not any(u in line for u in unused))


class _Cache:
    """Compressed bundles by path, compressed once each (they are fingerprinted, so immutable)."""

    def __init__(self) -> None:
        self._data: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def get(self, key: str, raw: bytes) -> bytes:
        with self._lock:
            hit = self._data.get(key)
        if hit is None:
            hit = gzip.compress(raw, LEVEL)
            with self._lock:
                self._data[key] = hit
        return hit


def install(server: flask.Flask, hosts: frozenset[str] | None) -> None:
    """The host check, the headers and compression on every response of ``server``."""
    cache = _Cache()

    @server.before_request
    def check_host():
        if hosts is not None and _host_name(flask.request.host) not in hosts:
            return flask.Response("coach dash: this server answers to its own address only\n", 400,
                                  mimetype="text/plain")
        return None

    @server.after_request
    def finish(response: flask.Response) -> flask.Response:
        for k, v in HEADERS.items():
            response.headers.setdefault(k, v)
        return _compress(response, cache)


def _compress(response: flask.Response, cache: _Cache) -> flask.Response:
    accepts = "gzip" in (flask.request.headers.get("Accept-Encoding") or "").lower()
    kind = (response.mimetype or "").lower()
    if (not accepts or response.status_code != 200 or "Content-Encoding" in response.headers
            or not kind.startswith(COMPRESSIBLE) or response.is_streamed and not response.direct_passthrough):
        return response
    response.direct_passthrough = False  # a file Flask would stream: read it to compress it
    raw = response.get_data()
    if len(raw) < MIN_BYTES:
        return response
    bundle = flask.request.path.startswith("/_dash-component-suites/")
    body = cache.get(flask.request.path, raw) if bundle else gzip.compress(raw, LEVEL)
    response.set_data(body)
    response.headers["Content-Encoding"] = "gzip"
    response.headers["Content-Length"] = str(len(body))
    response.headers.add("Vary", "Accept-Encoding")
    return response
