"""``marm init``: wire marm into Claude Code, Codex CLI and Gemini CLI.

Each agent keeps its hooks (and MCP servers) in a JSON file the user also edits by
hand, so marm only ever *merges*: it adds its own handler to each event it uses, leaves
every other key, group and handler alone, and recognises its own handlers again by
their command (``... marm hook EVENT``), which makes a second run a no-op. Before a file
changes, its previous bytes are kept beside it (``FILE.marm-backup``) and, the first
time, in marm's install manifest, so ``--uninstall`` can put back the original file
byte for byte when nothing else in it changed since (and otherwise removes exactly
marm's entries).

The hook command names the ``marm`` that is running ``marm init`` by absolute path
(the console script beside this Python), because agents run hooks without the user's
virtualenv on PATH.
"""

from __future__ import annotations

import re
import shlex
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import tomlkit

from marm.configfile import Jsonc, load_json, load_toml, toml_doc
from marm.errors import BadInput
from marm.hooks.event import EVENTS, NATIVE

#: Seconds each agent may give a marm hook (the hook gives up earlier by itself).
TIMEOUT = {"session-start": 10, "prompt": 10, "post-tool": 5, "stop": 10, "pre-compact": 15,
           "session-end": 2}
#: Tool matchers for the post-tool event: file edits and shell commands.
TOOL_MATCHER = {"claude": "Edit|MultiEdit|Write|NotebookEdit|Bash", "codex": "Bash|apply_patch",
                "gemini": "write_file|replace|run_shell_command"}
_MARM_COMMAND = re.compile(r"(?:^|[\s/\\\"'])marm(?:\.exe)?[\"']?\s+hook\s|-m\s+marm\s+hook\s")


def executable() -> str:
    """How an agent should start this marm: the console script beside this Python,
    else ``marm`` on PATH, else this Python with ``-m marm`` (shell-quoted)."""
    here = Path(sys.executable).parent
    for candidate in (here / "marm", here / "marm.exe"):
        if candidate.is_file():
            return shlex.quote(str(candidate))
    found = shutil.which("marm")
    if found:
        return shlex.quote(found)
    return f"{shlex.quote(sys.executable)} -m marm"


def is_marm(handler: Any) -> bool:
    return isinstance(handler, dict) and bool(_MARM_COMMAND.search(f" {handler.get('command', '')} "))


# --- hook configuration (one shape for the three agents) ----------------------------

def hook_entries(agent: str, exe: str) -> dict[str, dict[str, Any]]:
    """``{native event name: matcher group}`` marm adds for ``agent``."""
    out: dict[str, dict[str, Any]] = {}
    for event in EVENTS:
        handler: dict[str, Any] = {"type": "command", "command": f"{exe} hook {event} --agent {agent}"}
        if agent == "gemini":
            handler = {"name": f"marm-{event}", **handler, "timeout": TIMEOUT[event] * 1000}
        else:
            handler["timeout"] = TIMEOUT[event]
        group: dict[str, Any] = {"hooks": [handler]}
        if event == "post-tool":
            group = {"matcher": TOOL_MATCHER[agent], **group}
        out[NATIVE[agent][event]] = group
        if event == "post-tool" and agent == "claude":
            # Claude Code reports a failed tool call as its own event, not PostToolUse.
            out["PostToolUseFailure"] = {"matcher": "Bash", "hooks": [dict(handler)]}
    return out


def add_hooks(doc: Jsonc, agent: str, exe: str) -> None:
    """Add (or bring up to date) marm's handler for each event; every other handler stays."""
    if "hooks" not in doc.data:
        doc.set(("hooks",), {})
    if not isinstance(doc.data["hooks"], dict):
        raise BadInput("its \"hooks\" value is not an object; fix it by hand first")
    for name, group in hook_entries(agent, exe).items():
        groups = doc.data["hooks"].get(name)
        if groups is None:
            doc.set(("hooks", name), [group])
            continue
        if not isinstance(groups, list):
            raise BadInput(f"its hooks.{name} is not a list; fix it by hand first")
        ours = [(gi, hi) for gi, g in enumerate(groups) if isinstance(g, dict)
                for hi, h in enumerate(g.get("hooks") or []) if is_marm(h)]
        if not ours:
            doc.append(("hooks", name), group)
            continue
        gi, hi = ours[0]
        if groups[gi]["hooks"][hi] != group["hooks"][0]:
            doc.set(("hooks", name, gi, "hooks", hi), group["hooks"][0])
        if group.get("matcher") is not None and groups[gi].get("matcher") != group["matcher"] \
                and len(groups[gi]["hooks"]) == 1:
            doc.set(("hooks", name, gi, "matcher"), group["matcher"])
        for gi, hi in reversed(ours[1:]):  # a second marm handler (an older init): drop it
            _drop_handler(doc, name, gi, hi)


def _drop_handler(doc: Jsonc, name: str, gi: int, hi: int) -> None:
    group = doc.data["hooks"][name][gi]
    if len(group["hooks"]) == 1:
        doc.delete(("hooks", name, gi))
    else:
        doc.delete(("hooks", name, gi, "hooks", hi))


def remove_hooks(doc: Jsonc) -> None:
    hooks = doc.data.get("hooks")
    if not isinstance(hooks, dict):
        return
    for name in list(hooks):
        groups = doc.data["hooks"][name]
        if not isinstance(groups, list):
            continue
        for gi in reversed(range(len(groups))):
            g = groups[gi]
            if not isinstance(g, dict):
                continue
            for hi in reversed(range(len(g.get("hooks") or []))):
                if is_marm(g["hooks"][hi]):
                    _drop_handler(doc, name, gi, hi)
        if not doc.data["hooks"][name]:
            doc.delete(("hooks", name))
    if not doc.data["hooks"]:
        doc.delete(("hooks",))


def mcp_entry(exe: str) -> dict[str, Any]:
    words = shlex.split(exe)
    return {"command": words[0], "args": [*words[1:], "mcp"]}


def add_mcp(doc: Jsonc, exe: str, agent: str) -> None:
    if "mcpServers" not in doc.data:
        doc.set(("mcpServers",), {})
    servers = doc.data["mcpServers"]
    if not isinstance(servers, dict):
        raise BadInput("its \"mcpServers\" value is not an object; fix it by hand first")
    entry = mcp_entry(exe)
    if agent == "claude":
        # Claude Code (-p especially) sends its first request without waiting for MCP
        # servers unless they are marked alwaysLoad: then marm's tools are in it.
        entry["alwaysLoad"] = True
    current = servers.get("marm")
    if not isinstance(current, dict):
        doc.set(("mcpServers", "marm"), entry)
        return
    for key, value in entry.items():  # the user's own keys (env, timeout, trust) stay
        if current.get(key) != value:
            doc.set(("mcpServers", "marm", key), value)


def remove_mcp(doc: Jsonc) -> None:
    servers = doc.data.get("mcpServers")
    if isinstance(servers, dict) and "marm" in servers:
        doc.delete(("mcpServers", "marm"))
        if not doc.data["mcpServers"]:
            doc.delete(("mcpServers",))


def _json_edit(edit: Callable[[Jsonc], None], docs: dict[str, Jsonc]) -> Callable[[str | None], str | None]:
    """The edit as ``text -> new text``. ``docs`` holds the documents earlier edits of
    this run produced, by their text: a file that two edits change (Gemini keeps hooks
    and MCP servers in one file) is read once."""
    def apply(text: str | None) -> str | None:
        doc = (docs.pop(text, None) if text is not None else None) or Jsonc(text)
        edit(doc)
        if not doc.data and not doc.existed:
            return None
        after = doc.dumps() if doc.text != text else text
        if after is not None:
            docs[after] = doc.reread(after)
        return after
    return apply


#: Codex sends its first model request once its required MCP servers are up, waiting
#: for optional ones (marm) only ``mcp_optional_startup_grace_ms``; so that the first
#: request already lists marm's tools, init gives them this long (when the user set no
#: grace of their own). A required server would be waited for without limit, and a
#: broken one would stop Codex from starting: marm stays optional.
CODEX_GRACE_MS = 5000


def _add_toml(exe: str) -> Callable[[str | None], str | None]:
    """Codex's ``[mcp_servers.marm]``, updated in whatever form it already has (a table,
    an inline table, dotted keys), never added twice."""
    def apply(text: str | None) -> str | None:
        doc = toml_doc(text)
        if "mcp_optional_startup_grace_ms" not in doc:
            doc["mcp_optional_startup_grace_ms"] = CODEX_GRACE_MS
        entry = mcp_entry(exe)
        servers = doc.get("mcp_servers")
        if servers is None:
            doc["mcp_servers"] = tomlkit.table(is_super_table=True)
            servers = doc["mcp_servers"]
        if not isinstance(servers, dict):
            raise BadInput("its mcp_servers is not a table; fix it by hand first")
        current = servers.get("marm")
        if isinstance(current, dict):
            for key, value in entry.items():
                if current.get(key) != value:
                    current[key] = value
        else:
            table: tomlkit.items.Table | tomlkit.items.InlineTable = tomlkit.table()
            if isinstance(servers, tomlkit.items.InlineTable):
                table = tomlkit.inline_table()
            table.update(entry)
            servers["marm"] = table
        out = tomlkit.dumps(doc)
        return text if load_toml(out) == load_toml(text) else out
    return apply


def _remove_toml(text: str | None) -> str | None:
    if text is None:
        return None
    doc = toml_doc(text)
    servers = doc.get("mcp_servers")
    if not isinstance(servers, dict) or "marm" not in servers:
        return text
    if doc.get("mcp_optional_startup_grace_ms") == CODEX_GRACE_MS:
        del doc["mcp_optional_startup_grace_ms"]
    del servers["marm"]
    if not servers:
        del doc["mcp_servers"]
    out = tomlkit.dumps(doc)
    return out if out.strip() else None


# --- where each agent keeps what -----------------------------------------------------

@dataclass(frozen=True, slots=True)
class Places:
    hooks: Path
    mcp: Path
    skill: Path


def agent_home(agent: str, env: Mapping[str, str]) -> Path:
    """The agent's user-level config directory, honouring its own variable
    (``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``, ``GEMINI_CLI_HOME``)."""
    home = Path(env.get("HOME") or Path.home())
    if agent == "claude":
        return Path(env.get("CLAUDE_CONFIG_DIR") or home / ".claude")
    if agent == "codex":
        return Path(env.get("CODEX_HOME") or home / ".codex")
    return Path(env.get("GEMINI_CLI_HOME") or home) / ".gemini"


def places(agent: str, scope: str, env: Mapping[str, str], root: Path) -> Places:
    """Files for ``agent`` at ``scope`` (user: the agent's home; project: ``root``)."""
    home = Path(env.get("HOME") or Path.home())
    if agent == "claude":
        base = agent_home(agent, env) if scope == "user" else root / ".claude"
        settings = base / ("settings.json" if scope == "user" else "settings.local.json")
        if scope == "user":  # Claude keeps user MCP servers in .claude.json, beside its config dir
            mcp = Path(env["CLAUDE_CONFIG_DIR"]) / ".claude.json" if env.get("CLAUDE_CONFIG_DIR") \
                else home / ".claude.json"
        else:
            mcp = root / ".mcp.json"
        return Places(settings, mcp, base / "skills" / "marm" / "SKILL.md")
    base = agent_home(agent, env) if scope == "user" else root / f".{agent}"
    if agent == "codex":
        return Places(base / "hooks.json", base / "config.toml", base / "skills" / "marm" / "SKILL.md")
    return Places(base / "settings.json", base / "settings.json", base / "skills" / "marm" / "SKILL.md")


Edit = Callable[[str | None], str | None]


def edits(agent: str, scope: str, env: Mapping[str, str], root: Path, exe: str, mcp: bool,
          skill_text: str | None, remove: bool, docs: dict[str, Jsonc] | None = None,
          ) -> list[tuple[Path, str, Edit]]:
    """``(file, what, text -> new text)`` for one agent; applied in order per file. The
    JSON edits share ``docs`` (see ``_json_edit``)."""
    p = places(agent, scope, env, root)
    docs = {} if docs is None else docs
    out: list[tuple[Path, str, Edit]] = []
    if remove:
        out.append((p.hooks, "hooks", _json_edit(remove_hooks, docs)))
        out.append((p.mcp, "MCP server",
                    _remove_toml if agent == "codex" else _json_edit(remove_mcp, docs)))
        out.append((p.skill, "skill", lambda t: None if t == skill_text else t))
        return out
    out.append((p.hooks, f"hooks for {len(EVENTS)} events",
                _json_edit(lambda d: add_hooks(d, agent, exe), docs)))
    if mcp:
        out.append((p.mcp, "MCP server",
                    _add_toml(exe) if agent == "codex" else _json_edit(lambda d: add_mcp(d, exe, agent), docs)))
    if skill_text is not None:
        out.append((p.skill, "skill", lambda t: skill_text))
    return out


def skill_source() -> Path:
    """``skills/marm/SKILL.md`` of the checkout this marm runs from, or the copy a wheel
    installs under ``<prefix>/share/marm``."""
    checkout = Path(__file__).resolve().parent.parent / "skills" / "marm" / "SKILL.md"
    if checkout.is_file():
        return checkout
    return Path(sys.prefix) / "share" / "marm" / "skills" / "marm" / "SKILL.md"


def same(path: Path, a: str | None, b: str | None, docs: dict[str, Jsonc] | None = None) -> bool:
    """Whether two versions of a config file say the same (compared as data). A JSON
    text is read from ``docs`` when an edit left it there, and left there once read."""
    if a == b or (a or "").strip() == (b or "").strip():
        return True
    try:
        if path.suffix == ".toml":
            return load_toml(a) == load_toml(b)
        if path.suffix == ".json":
            return _json_data(a, docs) == _json_data(b, docs)
    except BadInput:
        pass
    return False


def _json_data(text: str | None, docs: dict[str, Jsonc] | None) -> Any:
    if text is None or docs is None:
        return load_json(text)
    if text not in docs:
        docs[text] = Jsonc(text)
    return docs[text].data


def hand_files(exe: str = "marm") -> dict[str, str]:
    """The plain hook files in ``hooks/`` for wiring by hand (``marm`` on PATH)."""
    return {
        f"{agent}/{name}": orjson.dumps(
            {"hooks": {k: [g] for k, g in hook_entries(agent, exe).items()}},
            option=orjson.OPT_INDENT_2).decode() + "\n"
        for agent, name in (("claude", "settings.json"), ("codex", "hooks.json"),
                            ("gemini", "settings.json"))
    }


def trust_steps(agents: list[str]) -> list[str]:
    """The one step each agent still needs from the user before marm's part runs."""
    out = []
    if "codex" in agents:
        out.append("Codex skips hooks nobody has trusted: start `codex`, open /hooks and trust marm's "
                   "(again after an init that changed them); `marm doctor` checks it")
    if "gemini" in agents:
        out.append("Gemini CLI runs no MCP server and no hooks in a folder it does not trust: trust "
                   "your project folder when Gemini asks (or with /permissions); `marm doctor` checks it")
    return out


# --- applying a plan -------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class FileChange:
    path: str
    agents: str
    what: str
    action: str      # created | updated | unchanged | deleted | restored


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"cannot read {path}: {exc}") from None


def _manifest(path: Path) -> dict[str, Any]:
    """marm's own install manifest (plain JSON that marm wrote): ``{}`` when there is none."""
    text = _read(path)
    if text is None:
        return {}
    try:
        manifest = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise BadInput(f"{path} is not valid JSON ({exc}); move it away to start afresh") from None
    if not isinstance(manifest, dict):
        raise BadInput(f"{path} does not hold a JSON object; move it away to start afresh")
    return manifest


def _write(path: Path, text: str | None) -> None:
    if text is None:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".marm-tmp")
    tmp.write_bytes(text.encode("utf-8"))
    tmp.replace(path)


def _unchanged_but_marm(path: Path, steps: list[tuple[str, str, Edit]], after: str | None,
                        original: str | None, docs: dict[str, Jsonc]) -> bool:
    """Whether the file, marm's part taken out, says what the original said with marm's
    part (if it had one) taken out: then the original comes back as it was."""
    if same(path, after, original, docs):
        return True
    try:
        stripped = original
        for _, _, edit in steps:
            stripped = edit(stripped)
    except BadInput:
        return False
    return same(path, after, stripped, docs)


def _missing_dirs(path: Path) -> list[str]:
    """The folders ``path`` needs that do not exist yet, deepest first."""
    out = []
    parent = path.parent
    while not parent.exists():
        out.append(str(parent))
        parent = parent.parent
    return out


def _remove_dirs(dirs: list[str]) -> None:
    for d in sorted(set(dirs), key=lambda d: len(Path(d).parts), reverse=True):
        try:
            Path(d).rmdir()  # deepest first; a folder that holds anything else stays
        except OSError:
            pass


def apply(
    agents: list[str], scope: str, env: Mapping[str, str], root: Path, manifest_path: Path, *,
    mcp: bool, dry_run: bool, uninstall: bool,
) -> tuple[list[FileChange], list[str]]:
    """Install (or uninstall) for ``agents``; returns what changed and notes for the user.

    The manifest (``installed.json`` in MARM_HOME) remembers each file's bytes before
    marm first changed it and the folders marm created for it, so an uninstall puts
    back the original (when nothing else changed) and removes those folders again.
    The backup beside a file (``FILE.marm-backup``) is written once, before marm's first
    change, and never overwritten by a later run.
    """
    notes: list[str] = []
    source = skill_source()
    skill_text = _read(source)
    if skill_text is None and not uninstall:
        notes.append(f"skill not installed: {source} is not part of this installation")
    exe = executable()
    plan: dict[Path, list[tuple[str, str, Edit]]] = {}
    docs: dict[str, Jsonc] = {}
    for agent in agents:
        for path, what, edit in edits(agent, scope, env, root, exe, mcp, skill_text, uninstall, docs):
            plan.setdefault(path, []).append((agent, what, edit))
    manifest = _manifest(manifest_path)
    originals: dict[str, Any] = manifest.setdefault("originals", {})
    created: dict[str, list[str]] = manifest.setdefault("created_dirs", {})
    # Work out every file's new text first: a file marm cannot read changes nothing at all.
    worked: list[tuple[Path, str | None, str | None, FileChange]] = []
    for path, steps in plan.items():
        before = _read(path)
        after = before
        try:
            for _, _, edit in steps:
                after = edit(after)
        except BadInput as exc:
            raise BadInput(f"{path}: {exc.message}") from None
        key = str(path)
        if uninstall and path.name == "SKILL.md" and key in originals and originals[key] is None:
            after = None  # marm put the skill there (an older copy of it, maybe)
        if uninstall and key in originals and _unchanged_but_marm(path, steps, after, originals[key], docs):
            after = originals[key]  # nothing else changed: the original, byte for byte
        if before is None and after is None:
            continue  # never there, not there now: nothing to report
        if after == before:
            action = "unchanged"
        elif before is None:
            action = "created"
        elif after is None:
            action = "deleted"
        elif uninstall and key in originals and after == originals[key]:
            action = "restored"
        else:
            action = "updated"
        change = FileChange(key, ", ".join(dict.fromkeys(a for a, _, _ in steps)),
                            ", ".join(w for _, w, _ in steps), action)
        worked.append((path, before, after, change))
    emptied: list[str] = []
    for path, before, after, change in worked:
        if dry_run or change.action == "unchanged":
            continue
        backup = path.with_name(path.name + ".marm-backup")
        if uninstall:
            backup.unlink(missing_ok=True)  # the original is back, or marm's part is gone
            originals.pop(change.path, None)
            _write(path, after)
            if after is None:
                emptied.extend(created.pop(change.path, []))
            continue
        if before is not None and path.name != "SKILL.md" and not backup.exists():
            _write(backup, before)
        originals.setdefault(change.path, before)
        if before is None:
            created.setdefault(change.path, _missing_dirs(path))
        _write(path, after)
    _remove_dirs(emptied)
    if not dry_run:
        manifest_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _write(manifest_path, orjson.dumps(manifest, option=orjson.OPT_INDENT_2).decode() + "\n")
    changes = [change for *_, change in worked]
    if not uninstall:
        notes.extend(trust_steps(agents))
    return changes, notes


# --- doctor: is marm's part allowed to run? ---------------------------------------------

def trust_checks(env: Mapping[str, str], cwd: Path) -> list[tuple[str, bool, str, str | None]]:
    """``(name, ok, detail, advice)`` for each agent marm is wired into at user level."""
    out: list[tuple[str, bool, str, str | None]] = []
    gemini = places("gemini", "user", env, cwd).hooks
    try:
        settings = load_json(_read(gemini))
    except BadInput:
        settings = {}
    if any(is_marm(h) for gs in (settings.get("hooks") or {}).values() if isinstance(gs, list)
           for g in gs if isinstance(g, dict) for h in g.get("hooks") or []):
        folder_trust = ((settings.get("security") or {}).get("folderTrust") or {}).get("enabled", True)
        trusted = _gemini_trusted(gemini.parent / "trustedFolders.json", cwd.resolve())
        ok = trusted or folder_trust is False
        out.append(("gemini trust", ok,
                    f"{cwd} is trusted" if trusted else "folder trust is off" if ok else f"{cwd} is not trusted",
                    None if ok else "start `gemini` here and trust the folder (or /permissions): "
                                    "untrusted, it runs no MCP server and no hooks"))
    codex = places("codex", "user", env, cwd)
    try:
        hooks = load_json(_read(codex.hooks))
        config = load_toml(_read(codex.mcp))
    except BadInput:
        hooks, config = {}, {}
    if any(is_marm(h) for gs in (hooks.get("hooks") or {}).values() if isinstance(gs, list)
           for g in gs if isinstance(g, dict) for h in g.get("hooks") or []):
        state = (config.get("hooks") or {}).get("state") or {}
        trusted_hooks = [k for k, v in state.items() if isinstance(v, dict) and v.get("trusted_hash")]
        out.append(("codex hook trust", bool(trusted_hooks),
                    f"{len(trusted_hooks)} hook(s) trusted in {codex.mcp.name} [hooks.state]",
                    None if trusted_hooks else "start `codex`, open /hooks and trust marm's hooks: "
                                         "Codex skips untrusted hooks silently"))
    return out


def _gemini_trusted(path: Path, cwd: Path) -> bool:
    try:
        folders = load_json(_read(path))
    except BadInput:
        return False
    for folder, level in folders.items():
        base = Path(folder)
        if level == "TRUST_PARENT":
            base = base.parent
        if level in ("TRUST_FOLDER", "TRUST_PARENT") and (cwd == base or base in cwd.parents):
            return True
    return False
