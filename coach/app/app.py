"""The Dash app: navigation, the page container, the shared store, and ``create_app``.

Pages are modules under ``coach/app/pages/``; each has ``PATH`` (or ``PREFIX`` for pages with a
parameter in the path), ``TITLE``, ``layout(ctx, rest, query)`` and ``register(app, ctx)`` for its
callbacks. A small router maps the URL to a page, so every page is reachable by URL and the app can
be built many times over (tests build one per test) without global registries.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import parse_qs, urlsplit

import flask

from dash import Dash, Input, Output, State, dcc, html, no_update

from coach.app import ids, server
from coach.app.components import guarded, header
from coach.app.context import Context, Settings
from coach.app.pages import explore, hardware, home, ladders, practice, reference, scenario

PAGES: tuple[ModuleType, ...] = (home, scenario, explore, ladders, hardware, practice, reference)
NAV: tuple[ModuleType, ...] = (home, explore, ladders, hardware, practice, reference)

#: Extra room for the JSON and base64 around an upload (4/3 of the file) in one callback request.
REQUEST_OVERHEAD = 4 / 3
REQUEST_SLACK_BYTES = 1 * 2**20


def route(pathname: str | None) -> tuple[ModuleType | None, str]:
    """The page for ``pathname`` and the rest of the path after its prefix."""
    path = (pathname or "/").rstrip("/") or "/"
    for page in PAGES:
        prefix = getattr(page, "PREFIX", None)
        if prefix and path.startswith(prefix):
            return page, path[len(prefix):]
        if getattr(page, "PATH", None) == path:
            return page, ""
    return None, ""


def _nav(active: str) -> html.Nav:
    return html.Nav([
        dcc.Link(p.NAV_LABEL, href=p.PATH, className="active" if p.PATH == active else "", id=f"nav-{p.__name__.rsplit('.', 1)[-1]}")
        for p in NAV
    ], className="nav", id=ids.NAV)


def render(ctx: Context, pathname: str | None, search: str | None) -> tuple[Any, list[Any]]:
    """The page for a URL, and the navigation links with the current one marked."""
    page, rest = route(pathname)
    active = page.PATH if page is not None and page in NAV else ""
    if page is None:
        return html.Div([header("Page not found", f"Nothing lives at {pathname}."),
                         dcc.Link("Back to the start", href="/")]), _nav(active).children
    query = {k: v[-1] for k, v in parse_qs((search or "").lstrip("?")).items()}
    return guarded(lambda: page.layout(ctx, rest, query), page.TITLE), _nav(active).children


def _shell(ctx: Context, pathname: str, search: str) -> html.Div:
    page, nav = render(ctx, pathname, search)
    return html.Div([
        dcc.Location(id=ids.URL, refresh="callback-nav"),
        # the URL the layout drew: the location's first report of it (on mount) draws nothing again
        dcc.Store(id=ids.DRAWN, data=_url(pathname, search)),
        dcc.Store(id=ids.REPORT, storage_type="session"),
        html.Header([html.A(["coach", html.Span(" · GPU performance")], href="/", className="brand"),
                     html.Nav(nav, className="nav", id=ids.NAV)], className="topbar", id="topbar"),
        html.Main(page, id=ids.PAGE, className="page"),
    ])


def _requested_url() -> tuple[str, str]:
    """The path and query of the page the browser shows, while it asks for the layout.

    The renderer fetches the layout from the page itself, so the request's referrer is the page's
    URL; drawing that page into the layout saves the round trip of a routing callback.
    """
    if not flask.has_request_context() or not flask.request.referrer:
        return "/", ""
    url = urlsplit(flask.request.referrer)
    return url.path, f"?{url.query}" if url.query else ""


def _url(pathname: str | None, search: str | None) -> str:
    return ((pathname or "/").rstrip("/") or "/") + (search or "")


class _App(Dash):
    def interpolate_index(self, **kwargs: Any) -> str:
        kwargs["scripts"] = server.strip_unused(kwargs.get("scripts", ""))
        return super().interpolate_index(**kwargs)


def create_app(settings: Settings | None = None) -> Dash:
    """A new app instance. ``settings`` chooses the data folders, upload limit and walkthroughs."""
    ctx = Context(settings or Settings())
    app = _App(
        __name__,
        title="coach",
        update_title=None,
        assets_folder=str(Path(__file__).with_name("assets")),
        serve_locally=True,
        # Load plotly.js with the page rather than when the first graph appears: it then loads
        # while the report is read, instead of after (about a second saved on a 2-core laptop).
        # The chunks of components no page uses are left out (``server.strip_unused``).
        eager_loading=True,
        # Pages come and go with the URL, so most callbacks' components are absent at any moment.
        # tests/test_app.py checks that every id a callback names exists in some page's layout.
        suppress_callback_exceptions=True,
    )
    app.server.config["MAX_CONTENT_LENGTH"] = int(ctx.settings.upload_limit_bytes * REQUEST_OVERHEAD) + REQUEST_SLACK_BYTES
    server.install(app.server, ctx.settings.hosts)
    app.layout = lambda: _shell(ctx, *_requested_url())

    # Later moves between pages (links, back and forward): the first page comes with the layout, and
    # the location's report of that same URL when it mounts must not draw it again (over what the
    # page's own callbacks have drawn into it meanwhile: a report reopened from the session).
    @app.callback(Output(ids.PAGE, "children"), Output(ids.NAV, "children"), Output(ids.DRAWN, "data"),
                  Input(ids.URL, "pathname"), Input(ids.URL, "search"), State(ids.DRAWN, "data"),
                  prevent_initial_call=True)
    def render_page(pathname: str | None, search: str | None, drawn: str | None):
        if drawn is not None and drawn == _url(pathname, search):
            return no_update, no_update, None
        return (*render(ctx, pathname, search), None)

    for page in PAGES:
        page.register(app, ctx)
    app.ctx = ctx  # tests reach the open reports through here
    return app

