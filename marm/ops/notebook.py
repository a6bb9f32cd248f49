"""Notebook ops: named reusable instructions, and sessions."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Literal

from marm.context import Ctx
from marm.errors import BadInput, NotFound
from marm.ops.registry import Param, op
from marm.ops.results import Done, one_line
from marm.scope import display
from marm.store import flags, notebook, sessions
from marm.text import check_content, clean, clean_name


@dataclass(frozen=True, slots=True)
class NotebookItem:
    name: str
    content: str
    updated_at: str
    active_in: list[str]


@dataclass(frozen=True, slots=True)
class NotebookResult:
    action: str
    entries: list[NotebookItem]
    message: str

    def text(self) -> str:
        if self.action == "show" and self.entries:
            e = self.entries[0]
            return f"{e.name} (updated {e.updated_at[:10]})\n\n{e.content}"
        if self.action == "list":
            if not self.entries:
                return "the notebook is empty"
            return "\n".join(
                f"{e.name}{' [active: ' + ', '.join(e.active_in) + ']' if e.active_in else ''}:"
                f" {one_line(e.content, 80)}"
                for e in self.entries
            )
        return self.message


def _item(e: notebook.NotebookEntry) -> NotebookItem:
    return NotebookItem(e.name, e.content, e.updated_at, list(e.active_in))


def active_entries(ctx: Ctx, sessions: Iterable[str]) -> dict[str, notebook.NotebookEntry]:
    """The notebook entries active in any of ``sessions``, by name."""
    return {e.name: e for s in sessions for e in notebook.active_for(ctx.store(), s)}


@op("notebook", mcp="marm_notebook")
def notebook_op(
    ctx: Ctx,
    action: Annotated[Literal["add", "use", "show", "list", "delete"],
                      Param("add NAME TEXT | use NAME | show NAME | list | delete NAME", argument=True,
                            mcp_help="add, use, show, list or delete")],
    name: Annotated[str | None, Param("entry name", argument=True)] = None,
    content: Annotated[str | None, Param("entry text for add",
                                         argument=True, stdin=True)] = None,
    session: Annotated[str | None, Param("session to activate the entry in (use)", short="-s")] = None,
) -> NotebookResult:
    """Keep named, reusable instructions; `use` activates one for a session.

    Active entries are part of the briefing an agent gets at session start.

    MCP:
      `add` needs `name` and `content`; `use`, `show` and `delete` need `name`; `list`
      needs neither.
    Examples:
      marm notebook add style "Prefer small commits with honest messages"
      marm notebook use style
      marm notebook list
      marm notebook show style
      marm notebook delete style
    """
    store = ctx.store()
    if action == "list":
        return NotebookResult(action, [_item(e) for e in notebook.listing(store)], "")
    if not name or not name.strip():
        raise BadInput(f"notebook {action} needs a NAME")
    if action == "add":
        if content is None:
            raise BadInput("notebook add needs the entry TEXT")
        cleaned = clean(check_content(content))
        name = clean_name(name)
        saved = notebook.put(store, name, cleaned.text.strip())
        return NotebookResult(action, [_item(saved)], f"saved notebook entry {name!r}")
    entry = notebook.get(store, name)
    if entry is None:
        raise NotFound(f"no notebook entry named {name!r}")
    if action == "show":
        return NotebookResult(action, [_item(entry)], "")
    if action == "use":
        session_name = ctx.session(session)
        notebook.activate(store, name, session_name)
        active = notebook.get(store, name)
        assert active is not None
        return NotebookResult(action, [_item(active)], f"{name!r} is active in session {session_name}")
    notebook.delete(store, name)
    return NotebookResult(action, [_item(entry)], f"deleted notebook entry {name!r}")


@dataclass(frozen=True, slots=True)
class SessionItem:
    name: str
    project: str | None
    platform: str | None
    created_at: str
    last_seen_at: str
    memories: int
    active: bool


@dataclass(frozen=True, slots=True)
class SessionsResult:
    active: str
    sessions: list[SessionItem]

    def text(self) -> str:
        if not self.sessions:
            return f"no sessions yet (active: {self.active})"
        return "\n".join(
            f"{'*' if s.active else ' '} {s.name}  {s.memories} memories  last {s.last_seen_at[:16]}"
            f"  {display(s.project)}"
            for s in self.sessions
        )


@op("sessions", mcp="marm_sessions", read_only=True, idempotent=True)
def sessions_op(
    ctx: Ctx,
    project: Annotated[str | None, Param("project name or path (default: current)", short="-p")] = None,
    all_projects: Annotated[bool, Param("sessions of every project")] = False,
) -> SessionsResult:
    """List sessions, most recently used first (* marks the active one).

    Examples:
      marm sessions
      marm sessions --all-projects
    """
    active = ctx.session()
    rows = sessions.listing(ctx.store(), None if all_projects else ctx.project(project), all_projects)
    return SessionsResult(
        active,
        [SessionItem(s.name, s.project, s.platform, s.created_at, s.last_seen_at, s.memories,
                     s.name == active) for s in rows],
    )


@op("session", "use")
def session_use(ctx: Ctx, name: Annotated[str, Param("session name", argument=True)]) -> Done:
    """Make NAME the session new memories are tagged with (saved; every process sees it).

    Examples:
      marm session use release-2026-12
    """
    if not name.strip():
        raise BadInput("a session name cannot be empty")
    name = clean_name(name)
    store = ctx.store()
    flags.put(store, "session", name)
    with store.write():
        sessions.touch(store, name, ctx.project())
    return Done(True, f"active session: {name}", {"session": name})
