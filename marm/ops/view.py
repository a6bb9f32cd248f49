"""``marm view``: the store as one self-contained HTML page, or served to act on it.

CLI only (no MCP tool): it writes a file for a person or runs a foreground server in
their terminal, neither of which an agent's tool call should do. The page's actions
call the ops of this registry (source ``view``); see ``marm/view/``.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from marm.errors import BadInput
from marm.context import Ctx
from marm.ops.memory import AllProjects, ProjectOpt
from marm.ops.registry import Param, op
from marm.scope import display

#: Memories a page carries by default (the most recent ones).
DEFAULT_LIMIT = 5000
#: A served page stops after this long without a request.
DEFAULT_IDLE = 1800


@dataclass(frozen=True, slots=True)
class ViewResult:
    path: str | None               # the file written (None when served)
    url: str | None                # the served address (None for a file)
    scope: str
    memories: int                  # memories on the page
    total: int                     # memories in scope
    left_out: int
    bytes: int
    seconds: float
    served: dict[str, object] | None = None

    def text(self) -> str:
        left = f"; {self.left_out} older left out (--limit)" if self.left_out else ""
        if self.path:
            return f"{self.path}\n  {self.scope}: {self.memories} of {self.total} memories{left}"
        s = self.served or {}
        return (f"marm view: stopped ({s.get('reason')}) after {s.get('requests')} request(s),"
                f" {s.get('actions')} action(s), {s.get('refused')} refused")


def default_output(home: Path, scope: str | None, all_projects: bool) -> Path:
    """``MARM_HOME/view/<scope>.html``: inside marm's private data directory, one file
    per scope, so a page never lands in a repository or a shared temp directory."""
    if all_projects:
        name = "all-projects"
    elif scope is None:
        name = "global"
    else:
        safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in display(scope))[:40]
        name = f"{safe}-{hashlib.sha256(scope.encode()).hexdigest()[:8]}"
    return home / "view" / f"{name}.html"


def _write_private(path: Path, text: str) -> int:
    """Write ``text`` to ``path`` atomically, readable by the user only (it holds memories)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    data = text.encode("utf-8")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return len(data)


@op("view")
def view(
    ctx: Ctx,
    project: ProjectOpt = None,
    all_projects: AllProjects = False,
    output: Annotated[str | None, Param("write the page to this file (default: MARM_HOME/view/<scope>.html)",
                                        short="-o")] = None,
    open: Annotated[bool, Param("open the page (or the served address) in the platform browser")] = False,
    limit: Annotated[int, Param("most recent memories the page carries; it says how many it left out",
                                short="-n")] = DEFAULT_LIMIT,
    serve: Annotated[bool, Param("serve the page from this terminal (127.0.0.1, random port and token) "
                                 "so it can doubt, retract, restore, supersede, forget and review concepts")] = False,
    idle: Annotated[int, Param("with --serve: stop after this many seconds without a request")] = DEFAULT_IDLE,
) -> ViewResult:
    """See and fix your memory in a browser: one self-contained HTML page, no daemon.

    Writes one HTML file (no network, no CDN; it opens from file://) and prints its
    path: memories with search as you type and filters, the review queue, the concept
    graph, the code graph of the project, and status. With --serve the same page is
    served until Ctrl-C or --idle seconds without a request, from 127.0.0.1 only behind
    a random token in the printed URL, and its buttons act through the same operations
    as the CLI (their history says `view`).

    Examples:
      marm view --open
      marm view --serve --idle 600
      marm view --all-projects -o /tmp/marm.html
    """
    from marm.view import data as view_data
    from marm.view import page

    if limit < 1:
        raise BadInput("--limit must be at least 1")
    if serve and output:
        raise BadInput("--output writes a file and --serve serves the page: pick one")
    if idle < 1:
        raise BadInput("--idle must be at least 1 second")
    started = time.monotonic()
    scope = None if all_projects else ctx.project(project)
    label = "every project" if all_projects else display(scope)
    if serve:
        return _serve(ctx, scope, all_projects, limit, idle, open, started, label)
    snapshot = view_data.collect(ctx, project=scope, all_projects=all_projects, limit=limit)
    target = (ctx.cwd / Path(output).expanduser()) if output else default_output(ctx.home, scope, all_projects)
    size = _write_private(target, page.build(snapshot))
    if open:
        import webbrowser

        webbrowser.open(target.resolve().as_uri())
    return ViewResult(str(target), None, label, len(snapshot["memories"]), snapshot["total"],
                      snapshot["left_out"], size, round(time.monotonic() - started, 3))


def _serve(ctx: Ctx, scope: str | None, all_projects: bool, limit: int, idle: int, open_: bool,
           started: float, label: str) -> ViewResult:
    from dataclasses import asdict

    from marm.view import data as view_data
    from marm.view import page
    from marm.view.serve import ViewServer, run_action, serve

    def fresh() -> dict:
        c = Ctx(source="view", cwd=ctx.cwd, env=ctx.env)
        try:
            return view_data.collect(c, project=scope, all_projects=all_projects, limit=limit, serve=True)
        finally:
            c.close()

    ctx.close()  # each request opens its own store
    server = ViewServer(lambda: page.build(fresh()), fresh,
                        lambda action, args: run_action(ctx.cwd, ctx.env, action, args))
    if open_:
        import webbrowser

        webbrowser.open(server.stats.url)
    stats = serve(server, idle)
    return ViewResult(None, stats.url.split("?")[0], label, 0, 0, 0, 0,
                      round(time.monotonic() - started, 3),
                      {k: v for k, v in asdict(stats).items() if k != "url"})
