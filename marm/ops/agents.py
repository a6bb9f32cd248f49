"""Agent integration ops (CLI only): ``marm hook`` and ``marm init``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from marm.context import Ctx
from marm.errors import BadInput
from marm.hooks.event import AGENTS
from marm.ops.registry import Param, op
from marm.scope import git_project
from marm.store import events

Event = Literal["session-start", "prompt", "post-tool", "stop", "pre-compact", "session-end"]
Agent = Literal["claude", "codex", "gemini"]


@dataclass(frozen=True, slots=True)
class HookReply:
    """What the hook prints: the agent's own JSON, or nothing (``output`` None)."""

    output: dict[str, Any] | None

    def text(self) -> str:
        import orjson

        return "" if self.output is None else orjson.dumps(self.output).decode()


@op("hook")
def hook(
    ctx: Ctx,
    event: Annotated[Event, Param("the hook event", argument=True)],
    agent: Annotated[Agent, Param("which agent sends the payload", short="-a")] = "claude",
    payload: Annotated[str, Param("the agent's hook JSON",
                                  stdin=True)] = "-",
) -> HookReply:
    """Answer an agent's hook: read its JSON on stdin, reply in its JSON on stdout.

    session-start: a short briefing (decisions, fixes, notebook, doubted memories).
    prompt: the few memories relevant to the prompt, with ids. post-tool: marks edited
    repositories for re-indexing, keeps failed commands' error lines. stop/pre-compact:
    captures what the turn decided or fixed. session-end: starts a detached drain.
    Never blocks the agent: on any failure it exits 0 with one line on stderr.

    Examples:
      marm hook session-start --agent codex < payload.json
      echo '{"session_id": "s1", "cwd": "."}' | marm hook session-start --agent claude
    """
    from marm.hooks import run  # start-up cost: `marm init` needs no hook runner

    return HookReply(run.respond(event, agent, payload, ctx.env))


@dataclass(frozen=True, slots=True)
class InitChange:
    path: str
    agents: str
    what: str
    action: str


@dataclass(frozen=True, slots=True)
class InitResult:
    scope: str
    dry_run: bool
    uninstall: bool
    changes: list[InitChange]
    notes: list[str] = field(default_factory=list)

    def text(self) -> str:
        verb = {"created": "create", "updated": "update", "deleted": "delete", "restored": "restore"}
        lines = []
        for c in self.changes:
            if c.action == "unchanged":
                lines.append(f"unchanged  {c.path} ({c.what})")
            elif self.dry_run:
                lines.append(f"would {verb[c.action]}  {c.path} ({c.what})")
            else:
                lines.append(f"{c.action}  {c.path} ({c.what})")
        if all(c.action == "unchanged" for c in self.changes):
            lines.append("nothing to change")
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)


@op("init")
def init(
    ctx: Ctx,
    claude: Annotated[bool, Param("Claude Code")] = False,
    codex: Annotated[bool, Param("Codex CLI")] = False,
    gemini: Annotated[bool, Param("Gemini CLI")] = False,
    project: Annotated[bool, Param("this repository's agent config (Claude: settings.local.json)")] = False,
    user: Annotated[bool, Param("your user-level agent config (the default)")] = False,
    mcp: Annotated[bool, Param("also register `marm mcp` as the agent's MCP server")] = False,
    dry_run: Annotated[bool, Param("show what would change; change nothing")] = False,
    uninstall: Annotated[bool, Param("remove exactly what marm init added")] = False,
) -> InitResult:
    """Install marm's hooks, skill (and with --mcp its MCP server) into your agents.

    Merges marm's entries into each agent's configuration and leaves everything else
    as it was; keeps a backup (FILE.marm-backup); running it again changes nothing.
    Without an agent flag it picks the agents whose config directory exists.
    --uninstall puts back the original files when nothing else changed in them.

    Examples:
      marm init --claude
      marm init --codex --mcp --dry-run
      marm init --gemini --project
      marm init --claude --uninstall
    """
    # start-up cost: the config writers import json5 and tomlkit (~80 ms), which every
    # process that loads the registry (``marm mcp``) would otherwise pay
    from marm import install

    if project and user:
        raise BadInput("choose --project or --user, not both")
    scope = "project" if project else "user"
    top = git_project(ctx.cwd) if project else None
    root = Path(top) if top else ctx.cwd
    agents = [a for a, on in (("claude", claude), ("codex", codex), ("gemini", gemini)) if on]
    if not agents:
        agents = [a for a in AGENTS
                  if install.places(a, "user", ctx.env, root).hooks.parent.is_dir()]
        if not agents:
            raise BadInput("no agent configuration found; name one: --claude, --codex or --gemini")
    changes, notes = install.apply(agents, scope, ctx.env, root, ctx.home / "installed.json",
                                   mcp=mcp, dry_run=dry_run, uninstall=uninstall)
    if changes and not dry_run:
        store = ctx.store()
        with store.write():
            events.append(store, "agents.uninstall" if uninstall else "agents.init", "agent_config",
                          scope, detail={"agents": agents, "paths": [c.path for c in changes]})
    return InitResult(scope, dry_run, uninstall,
                      [InitChange(c.path, c.agents, c.what, c.action) for c in changes], notes)
