"""System ops: status, doctor, config."""

from __future__ import annotations

import importlib.util
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from marm import concepts, config
from marm.context import Ctx
from marm.embed import status as embed_status
from marm.errors import BadInput
from marm.ops.params import ProjectOpt
from marm.ops.registry import Param, op
from marm.ops.results import Done
from marm.store import derived, events, flags, hygiene, leases, memories, outbox, perms
from marm.store.db import Store
from marm.store.migrations import SCHEMA_VERSION
from marm.scope import display


@dataclass(frozen=True, slots=True)
class Component:
    """An optional part (model, pipeline, grammar) and whether this process could use it."""

    name: str
    available: bool
    detail: str


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def components() -> list[Component]:
    """Cheap availability checks: nothing heavy is imported to answer them."""
    parts = [Component("embedding", *embed_status.availability())]

    model = concepts.spacy_model()
    parts.append(Component(
        "concepts", model is not None,
        f"spaCy pipeline {model} (loaded by the drain and `marm concepts build`)" if model
        else "spaCy or its English pipeline is missing: concepts come from the rule-based extractor",
    ))
    grammars = [g for g in ("python", "javascript", "typescript", "go", "rust", "java", "c", "cpp")
                if _installed(f"tree_sitter_{g}")]
    parts.append(Component(
        "code", _installed("tree_sitter") and bool(grammars),
        f"tree-sitter grammars: {', '.join(grammars)}" if grammars else "tree-sitter is not installed",
    ))
    return parts


@dataclass(frozen=True, slots=True)
class StatusResult:
    database: str
    database_bytes: int
    schema_version: int
    memories: dict[str, int]
    projects: int
    events: int
    outbox: dict[str, dict[str, int]]
    leases: list[dict[str, str]]
    components: list[Component]
    settings: dict[str, str] = field(default_factory=dict)
    remotes: list[dict[str, object]] = field(default_factory=list)   # `marm sync`: each remote's state
    active: bool = True               # marm's hooks act in this directory
    activity: str = ""                # why (or why not)
    review: dict[str, int] = field(default_factory=dict)  # open `marm review` items here, by kind
    review_all_projects: int = 0      # ... and in every project

    def _review_line(self) -> str:
        if not self.review_all_projects:
            return "review     nothing waits"
        here = sum(self.review.values())
        kinds = ", ".join(f"{n} {k}" for k, n in self.review.items())
        line = f"review     {here} item(s) wait here ({kinds}): `marm review`" if here else "review     nothing waits here"
        if self.review_all_projects > here:
            line += f"; {self.review_all_projects} in all projects (`marm review --all-projects`)"
        return line

    def text(self) -> str:
        m = self.memories
        lines = [
            f"database   {self.database} ({self.database_bytes / 1024:.0f} KiB, schema v{self.schema_version})",
            f"memories   {m['total']} ({m['active']} active, {m['doubted']} doubted, "
            f"{m['superseded']} superseded, {m['retracted']} retracted) in {self.projects} project(s)",
            f"events     {self.events}",
            f"here       {self.activity}" if self.active else f"here       INACTIVE: {self.activity}",
            self._review_line(),
        ]
        backlog = ", ".join(
            f"{k}: {v['pending']} pending" + (f", {v['parked']} parked" if v["parked"] else "")
            for k, v in sorted(self.outbox.items())
        )
        lines.append(f"backlog    {backlog or 'empty'}")
        for lease in self.leases:
            state = "running" if lease["alive"] == "yes" else "stale"
            lines.append(f"lease      {lease['name']}: {state}, pid {lease['pid']} since {lease['started_at']}"
                         f" {lease['progress']}")
        for c in self.components:
            lines.append(f"{c.name:<10} {'ok' if c.available else 'unavailable'}: {c.detail}")
        for r in self.remotes:
            behind = r.get("error") or f"{r['behind']} behind"
            lines.append(f"remote     {r['name']}: {r['ahead']} ahead, {behind}; last push "
                         f"{r['last_push_at'] or 'never'}, last pull {r['last_pull_at'] or 'never'}")
        return "\n".join(lines)


def _size(path: os.PathLike[str]) -> int:
    total = 0
    for suffix in ("", "-wal", "-shm"):
        try:
            total += os.stat(f"{os.fspath(path)}{suffix}").st_size
        except OSError:
            pass
    return total


@op("status", mcp="marm_status", read_only=True, idempotent=True)
def status(ctx: Ctx) -> StatusResult:
    """Counts, background backlog, running drains, database and optional parts.

    Examples:
      marm status
      marm status --json
    """
    from marm.ops.projects import activity

    store = ctx.store()
    here = activity(ctx)
    return StatusResult(
        database=str(store.path),
        database_bytes=_size(store.path),
        schema_version=store.schema_version(),
        memories=memories.counts(store),
        projects=len(memories.projects(store)),
        events=events.count(store),
        outbox=outbox.counts(store),
        leases=[
            {"name": i.name, "holder": i.holder, "pid": str(i.pid), "started_at": i.started_at,
             "progress": str(i.progress), "alive": "yes" if i.alive else "no"}
            for i in leases.all_leases(store)
        ],
        components=components(),
        settings={k: ctx.setting(k) for k in config.SETTINGS},
        remotes=_remotes(store),
        active=here.active,
        activity=here.reason,
        review=hygiene.open_counts(store, ctx.project()),
        review_all_projects=sum(hygiene.open_counts(store, None, all_projects=True).values()),
    )


def _remotes(store: Store) -> list[dict[str, object]]:
    from marm.store import sync_state

    if not sync_state.remotes(store):
        return []
    from marm.sync import engine  # only a store with remotes pays for asking them

    return engine.status(store)


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str
    advice: str | None = None


@dataclass(frozen=True, slots=True)
class DoctorResult:
    ok: bool
    checks: list[Check]

    def text(self) -> str:
        lines = []
        for c in self.checks:
            lines.append(f"[{'ok' if c.ok else '!!'}] {c.name}: {c.detail}")
            if c.advice:
                lines.append(f"     -> {c.advice}")
        return "\n".join(lines)


@op("doctor", mcp=None, read_only=True, idempotent=True)
def doctor(ctx: Ctx) -> DoctorResult:
    """Check the store and the optional parts, and advise; changes nothing.

    Examples:
      marm doctor
    """
    store = ctx.store()
    checks: list[Check] = []
    for check in store.verify():
        advice = None
        if not check.ok:
            advice = ("restore from a backup or `marm export` what is readable" if check.name == "database"
                      else f"run: sqlite3 {store.path} \"INSERT INTO {check.name}({check.name}) VALUES('rebuild')\"")
        checks.append(Check(check.name, check.ok, check.detail, advice))
    schema = store.schema_version()
    checks.append(Check("schema", schema == SCHEMA_VERSION, f"v{schema} (this marm: v{SCHEMA_VERSION})"))
    mode = stat.S_IMODE(os.stat(store.path).st_mode)
    checks.append(Check("permissions", mode & 0o077 == 0, f"database file mode {oct(mode)}",
                        None if mode & 0o077 == 0 else f"chmod 600 {store.path}"))
    checks.append(_home_permissions(store.path.parent))
    for moved in derived.moves(store.path.parent)[-3:]:
        checks.append(Check(
            "derived database", True, f"moved aside at {moved['at'][:19]} as {moved['aside']}: {moved['reason']}; "
            + ("rebuild queued (`marm drain` does it)" if moved.get("queued") else "rebuilt at the next drain"),
            f"delete {moved['aside']} once you no longer need it"))
    parked = outbox.parked(store)
    checks.append(Check(
        "background tasks", not parked, f"{len(parked)} parked task(s)" if parked else "none parked",
        "see `marm status`; fix the cause, then `marm drain --retry-parked`" if parked else None,
    ))
    for lease in leases.all_leases(store):
        if not lease.alive:
            checks.append(Check(f"lease {lease.name}", False, f"held by dead pid {lease.pid}",
                                "it is released at the next run; nothing to do"))
    for c in components():
        checks.append(Check(c.name, c.available, c.detail,
                            None if c.available else "reinstall marm-cli to restore it"))
    from marm.install import trust_checks

    for name, ok, detail, advice in trust_checks(ctx.env, ctx.cwd):
        checks.append(Check(name, ok, detail, advice))
    return DoctorResult(all(c.ok for c in checks), checks)


def _home_permissions(home: Path) -> Check:
    """MARM_HOME and all in it private: what this process found looser (and tightened),
    and what is still looser now (a file chmod could not change)."""
    still = perms.looser_now(home)
    found = [f for f in perms.FOUND.values() if f.path == home or home in f.path.parents]
    if not found and not still:
        return Check("home permissions", True, f"{home} and everything in it 0700/0600")
    shown = still or found
    detail = ", ".join(f"{f.path.relative_to(home) if f.path != home else home} was {oct(f.mode)}"
                       for f in shown[:5]) + (f" (+{len(shown) - 5} more)" if len(shown) > 5 else "")
    if still:
        return Check("home permissions", False, detail, f"chmod -R go-rwx {home}")
    return Check("home permissions", False, f"{detail}; tightened now to 0700/0600",
                 "nothing left to do; find what loosened them (a copy, a umask, another tool)")


@dataclass(frozen=True, slots=True)
class ConfigResult:
    values: dict[str, str]
    sources: dict[str, str]
    project: str | None = None

    def text(self) -> str:
        from marm.scope import display

        head = [f"# for {display(self.project)}"]
        return "\n".join(head + [f"{k} = {v}   ({self.sources[k]})" for k, v in self.values.items()])


def _keys(given: Mapping[str, Any]) -> list[str]:
    """A TAB's candidates for a setting's name."""
    return list(config.SETTINGS)


def _values(given: Mapping[str, Any]) -> list[str]:
    """A TAB's candidates for a setting's value: its choices (if it has a fixed set), its
    default, and ``default`` (which removes a saved value)."""
    setting = config.SETTINGS.get(given.get("key") or "")
    if setting is None:
        return []
    return list(dict.fromkeys([*(setting.choices or (setting.default,)), "default"]))


@op("config", "get", read_only=True, idempotent=True)
def config_get(
    ctx: Ctx, key: Annotated[str | None, Param("setting name (default: all)", argument=True,
                                               choices=_keys)] = None,
    project: ProjectOpt = None,
) -> ConfigResult:
    """Show runtime settings and where each value comes from (project, project file
    .marm.toml, global, environment, default), for the current project or --project.

    Examples:
      marm config get
      marm config get inject.max_chars
    """
    keys = [_known(key)] if key else list(config.SETTINGS)
    where = ctx.project(project)
    values, sources = {}, {}
    for k in keys:
        resolved = ctx.resolved(k, where)
        values[k], sources[k] = resolved.value, resolved.source
    return ConfigResult(values, sources, where)


def _known(key: str) -> str:
    if key not in config.SETTINGS:
        raise BadInput(f"unknown setting {key!r}; known: {', '.join(config.SETTINGS)}")
    return key


@op("config", "set", idempotent=True)
def config_set(
    ctx: Ctx,
    key: Annotated[str, Param("setting name", argument=True, choices=_keys)],
    value: Annotated[str, Param("new value ('default' removes the saved value)", argument=True,
                                choices=_values)],
    project: Annotated[str | None, Param("save it for this project only ('.': the current repository)",
                                         short="-p")] = None,
    global_: Annotated[bool, Param("save it for every project (the default)")] = False,
) -> Done:
    """Save a runtime setting in the database: globally (it beats the environment
    variable), or with --project for one project (it beats the global value).

    Examples:
      marm config set inject.max_chars 2000
      marm config set capture off --project .
      marm config set embed.download default
    """
    spec = config.SETTINGS[_known(key)]
    if project is not None and global_:
        raise BadInput("--project and --global exclude each other")
    where = None
    if project is not None:
        if key in config.GLOBAL_ONLY:
            raise BadInput(f"{key} is a global setting; drop --project")
        where = ctx.project(project)
        if where is None:
            raise BadInput("not in a project: run it inside a repository or name one with --project P")
    scope_text = f" for {display(where)}" if where else ""
    if value == "default":
        _save(ctx, where, key, None)
        back = ctx.resolved(key, where)
        return Done(True, f"{key}{scope_text} back to {back.value} ({back.source})", {key: back.value})
    refused = spec.refusal(value)
    if refused:
        raise BadInput(refused)
    _save(ctx, where, key, value)
    return Done(True, f"{key} = {value}{scope_text}", {key: value})


def _save(ctx: Ctx, project: str | None, key: str, value: str | None) -> None:
    if project is None:
        flags.put(ctx.store(), key, value)
    else:
        flags.put_project(ctx.store(), project, key, value)


@dataclass(frozen=True, slots=True)
class CompletionScript:
    shell: str
    script: str

    def document(self) -> list[str]:
        return self.script.rstrip("\n").split("\n")

    def text(self) -> str:
        return f"completion script for {self.shell} printed on standard output"


@op("completion", read_only=True, idempotent=True)
def completion(
    ctx: Ctx,
    shell: Annotated[Literal["bash", "zsh", "fish"], Param("the shell", argument=True)],
) -> CompletionScript:
    """Print the shell completion script for bash, zsh or fish.

    Examples:
      marm completion bash > ~/.local/share/bash-completion/completions/marm
      marm completion zsh > "${fpath[1]}/_marm"
      marm completion fish > ~/.config/fish/completions/marm.fish
    """
    from marm.completion import SHELLS, scripts

    return CompletionScript(shell, scripts()[SHELLS[shell]])
