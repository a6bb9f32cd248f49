"""``marm view --serve``: the page from a foreground process, able to act.

The Jupyter model, kept small: one process in the user's terminal, bound to 127.0.0.1
on a port the OS picks, with a random token in the URL it prints. It exits on Ctrl-C or
after ``idle`` seconds without a request. It is not a daemon and not an API: it serves
the page, fresh page data, and the review actions the page offers, nothing else.

Every request is refused (403) unless all of these hold:

- the peer is a loopback address, and the ``Host`` header names this server
  (127.0.0.1:PORT or localhost:PORT), so a DNS-rebinding page cannot reach it;
- it carries the token (``?token=`` or the ``X-Marm-Token`` header), compared in
  constant time;
- an ``Origin`` header, when present, is this server's own origin; a POST must carry one
  (browsers always send it on POST), so no other site's page can act through the
  user's browser;
- ``Sec-Fetch-Site``, when present, is ``same-origin`` or ``none``.

State changes are POST only (``/api/op``, a JSON body ``{"action", "args"}``): the
action must be one of ``data.ACTIONS`` and its arguments must be parameters of that op.
The op runs through the registry with a ``Ctx(source="view")``, so its events say the
change came from the view, exactly as the CLI's say ``cli``.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import sys
import time
import typing
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, is_dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson

from marm.errors import MarmError
from marm.context import Ctx

#: Largest request body accepted (an action's arguments are a few ids and words).
MAX_BODY = 64 * 1024


@dataclass
class Served:
    url: str
    requests: int = 0
    refused: int = 0
    actions: int = 0
    reason: str = "stopped"


class ViewServer(ThreadingHTTPServer):
    """An HTTP server on 127.0.0.1 that knows its token and how to build the page.

    Threaded, so a browser's idle pre-opened connection cannot stall the page; each
    request opens its own store (SQLite in WAL mode serialises the writes)."""

    allow_reuse_address = False
    daemon_threads = True

    def __init__(self, build_page: Callable[[], str], build_data: Callable[[], dict],
                 run_action: Callable[[str, dict], dict], token: str | None = None) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.token = token or secrets.token_urlsafe(32)
        self.build_page, self.build_data, self.run_action = build_page, build_data, run_action
        self.port = self.server_address[1]
        self.hosts = {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}
        self.origins = {f"http://{h}" for h in self.hosts}
        self.stats = Served(f"http://127.0.0.1:{self.port}/?token={self.token}")
        self.last_request = time.monotonic()


class Handler(BaseHTTPRequestHandler):
    server: ViewServer
    server_version = "marm-view"
    sys_version = ""
    timeout = 10  # seconds a connection may stay silent

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        pass  # the terminal shows the URL and the summary, not a line per request

    # -- checks ---------------------------------------------------------------------

    def _refusal(self, post: bool) -> str | None:
        """Why this request is refused, or None."""
        try:
            if not ipaddress.ip_address(self.client_address[0]).is_loopback:
                return "not from this machine"
        except ValueError:
            return "not from this machine"
        if self.headers.get("Host", "") not in self.server.hosts:
            return "wrong Host header"
        origin = self.headers.get("Origin")
        if origin is not None and origin not in self.server.origins:
            return "another origin"
        if post and origin is None:
            return "a POST needs an Origin header"
        site = self.headers.get("Sec-Fetch-Site")
        if site is not None and site not in ("same-origin", "none"):
            return "a cross-site request"
        query = parse_qs(urlsplit(self.path).query)
        given = self.headers.get("X-Marm-Token") or (query.get("token") or [""])[0]
        if not hmac.compare_digest(given.encode(), self.server.token.encode()):
            return "missing or wrong token"
        return None

    def _send(self, code: int, body: bytes, content_type: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Referrer-Policy", "no-referrer")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, code: int, value: Any) -> None:
        self._send(code, orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS), "application/json")

    def _refuse(self, code: int, why: str) -> None:
        self.server.stats.refused += 1
        self._json(code, {"ok": False, "error": why})

    # -- methods --------------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        self.server.last_request = time.monotonic()
        self.server.stats.requests += 1
        why = self._refusal(post=False)
        if why:
            return self._refuse(403, why)
        path = urlsplit(self.path).path
        if path == "/":
            return self._send(200, self.server.build_page().encode("utf-8"), "text/html; charset=utf-8")
        if path == "/api/data":
            return self._json(200, self.server.build_data())
        if path == "/api/op":
            return self._refuse(405, "actions are POST only")
        return self._refuse(404, "no such page")

    def do_POST(self) -> None:  # noqa: N802
        self.server.last_request = time.monotonic()
        self.server.stats.requests += 1
        why = self._refusal(post=True)
        if why:
            return self._refuse(403, why)
        if urlsplit(self.path).path != "/api/op":
            return self._refuse(404, "no such action endpoint")
        if self.headers.get("Content-Type", "").split(";")[0].strip() != "application/json":
            return self._refuse(415, "send application/json")
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            length = -1
        if not 0 < length <= MAX_BODY:
            return self._refuse(400, "a body of 1 to 65536 bytes is needed")
        try:
            body = orjson.loads(self.rfile.read(length))
        except orjson.JSONDecodeError:
            return self._refuse(400, "the body is not JSON")
        if not isinstance(body, dict) or not isinstance(body.get("args", {}), dict):
            return self._refuse(400, 'send {"action": ..., "args": {...}}')
        try:
            result = self.server.run_action(str(body.get("action")), body.get("args") or {})
        except MarmError as exc:
            return self._json(200, {"ok": False, "error": exc.message})
        self.server.stats.actions += 1
        self._json(200, {"ok": True, **result})

    def do_PUT(self) -> None:  # noqa: N802
        self._refuse(405, "GET the page, POST an action")

    do_DELETE = do_PATCH = do_PUT


def run_action(cwd: Path, env: Mapping[str, str], action: str, args: dict) -> dict:
    """One page action through the op registry, as the CLI would run it (source ``view``)."""
    from marm.errors import BadInput
    from marm.ops import load
    from marm.view.data import ACTIONS

    path = ACTIONS.get(action)
    if path is None:
        raise BadInput(f"unknown action {action!r}")
    o = load(path[0])[path]
    params = {p.name: p for p in o.params()}
    kwargs: dict[str, Any] = {}
    for name, value in args.items():
        spec = params.get(name)
        if spec is None:
            raise BadInput(f"{action} takes no {name!r}")
        if value is None:
            if not spec.required:
                continue
            raise BadInput(f"{action} needs {name}")
        kwargs[name] = _coerce(action, name, spec.annotation, value)
    missing = [p.name for p in params.values() if p.required and p.name not in kwargs]
    if missing:
        raise BadInput(f"{action} needs {', '.join(missing)}")
    ctx = Ctx(source="view", cwd=cwd, env=dict(env))
    try:
        result = o.func(ctx, **kwargs)
    finally:
        ctx.close()
    plain = asdict(result) if is_dataclass(result) and not isinstance(result, type) else {"result": result}
    return {"message": getattr(result, "message", None) or f"{action}: done", "result": plain}


def _coerce(action: str, name: str, annotation: Any, value: Any) -> Any:
    from marm.errors import BadInput

    wants_int = annotation is int or set(typing.get_args(annotation)) == {int, type(None)}  # int | None
    if wants_int:
        if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).strip().isdigit():
            raise BadInput(f"{action}: {name} must be a number")
        return int(value)
    if not isinstance(value, str):
        raise BadInput(f"{action}: {name} must be text")
    return value


def serve(server: ViewServer, idle: float, out: Any = sys.stderr) -> Served:
    """Serve until Ctrl-C or ``idle`` seconds without a request."""
    print(f"marm view: serving on {server.stats.url}", file=out, flush=True)
    print(f"  (127.0.0.1 only; Ctrl-C stops; stops by itself after {idle:.0f}s without a request)",
          file=out, flush=True)
    server.timeout = 0.5
    try:
        while True:
            server.handle_request()
            if time.monotonic() - server.last_request > idle:
                server.stats.reason = f"idle for {idle:.0f}s"
                break
    except KeyboardInterrupt:
        server.stats.reason = "interrupted"
    finally:
        server.server_close()
    return server.stats
