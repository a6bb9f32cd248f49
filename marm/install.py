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

from marm.errors import BadInput
from marm.hooks.event import EVENTS, NATIVE

#: Seconds each agent may give a marm hook (the hook gives up earlier by itself).
TIMEOUT = {"session-start": 10, "prompt": 10, "post-tool": 5, "stop": 10, "pre-compact": 15,
           "session-end": 2}
#: Tool matchers for the post-tool event: file edits and shell commands.
TOOL_MATCHER = {"claude": "Edit|MultiEdit|Write|NotebookEdit|Bash", "codex": "Bash|apply_patch",
                "gemini": "write_file|replace|run_shell_command"}
FAILURE_EVENT = "PostToolUseFailure"
_MARM_COMMAND = re.compile(r"(?:^|[\s/\\\"'])marm(?:\.exe)?[\"']?\s+hook\s|-m\s+marm\s+hook\s")
TOML_BLOCK = '\n# added by `marm init` (`marm init --uninstall` removes it)\n[mcp_servers.marm]\ncommand = {cmd}\nargs = {args}\n'  # noqa: E501


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
    if agent == "claude":
        # Claude Code reports a failed tool call only as PostToolUseFailure (with an
        # ``error`` field), never as PostToolUse: the same handler takes both.
        out[FAILURE_EVENT] = {"matcher": "Bash", "hooks": [dict(out[NATIVE[agent]["post-tool"]]["hooks"][0])]}
    return out


def add_hooks(data: dict[str, Any], agent: str, exe: str) -> None:
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise BadInput("its \"hooks\" value is not an object; fix it by hand first")
    for name, group in hook_entries(agent, exe).items():
        groups = hooks.setdefault(name, [])
        if not isinstance(groups, list):
            raise BadInput(f"its hooks.{name} is not a list; fix it by hand first")
        ours = [h for g in groups if isinstance(g, dict) for h in g.get("hooks", []) if is_marm(h)]
        if not ours:
            groups.append(group)
        elif ours[0] != group["hooks"][0]:
            ours[0].clear()
            ours[0].update(group["hooks"][0])


def remove_hooks(data: dict[str, Any]) -> None:
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return
    for name in list(hooks):
        groups = hooks[name]
        if not isinstance(groups, list):
            continue
        kept = []
        for g in groups:
            if isinstance(g, dict) and any(is_marm(h) for h in g.get("hooks", [])):
                g["hooks"] = [h for h in g["hooks"] if not is_marm(h)]
                if not g["hooks"]:
                    continue
            kept.append(g)
        if kept:
            hooks[name] = kept
        else:
            del hooks[name]
    if not hooks:
        del data["hooks"]


def add_mcp(data: dict[str, Any], exe: str) -> None:
    servers = data.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise BadInput("its \"mcpServers\" value is not an object; fix it by hand first")
    words = shlex.split(exe)
    servers["marm"] = {"command": words[0], "args": [*words[1:], "mcp"]}


def remove_mcp(data: dict[str, Any]) -> None:
    servers = data.get("mcpServers")
    if isinstance(servers, dict) and "marm" in servers:
        del servers["marm"]
        if not servers:
            del data["mcpServers"]


def _json_edit(edit: Callable[[dict[str, Any]], None]) -> Callable[[str | None], str | None]:
    def apply(text: str | None) -> str | None:
        data = load_json(text)
        edit(data)
        if not data and text is None:
            return None
        return orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n"
    return apply


def load_json(text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise BadInput(f"it is not plain JSON ({exc}); marm leaves it alone") from None
    if not isinstance(data, dict):
        raise BadInput("it does not hold a JSON object; marm leaves it alone")
    return data


def _toml_block(exe: str) -> str:
    words = shlex.split(exe)
    quote = lambda s: orjson.dumps(s).decode()  # noqa: E731 - a TOML basic string is a JSON string
    return TOML_BLOCK.format(cmd=quote(words[0]), args="[" + ", ".join(quote(w) for w in [*words[1:], "mcp"]) + "]")


def _add_toml(exe: str) -> Callable[[str | None], str | None]:
    def apply(text: str | None) -> str | None:
        text = text or ""
        if re.search(r"(?m)^\s*\[mcp_servers\.marm\]", text):
            return text or None
        return text + ("\n" if text and not text.endswith("\n") else "") + _toml_block(exe)
    return apply


def _remove_toml(text: str | None) -> str | None:
    if text is None:
        return None
    pattern = re.compile(r"\n# added by `marm init`[^\n]*\n\[mcp_servers\.marm\]\n(?:[^\n\[][^\n]*\n)*")
    return pattern.sub("", text)


# --- where each agent keeps what -----------------------------------------------------

@dataclass(frozen=True, slots=True)
class Places:
    hooks: Path
    mcp: Path
    skill: Path


def places(agent: str, scope: str, env: Mapping[str, str], root: Path) -> Places:
    """Files for ``agent`` at ``scope`` (user: the home directory; project: ``root``)."""
    home = Path(env.get("HOME") or Path.home())
    if agent == "claude":
        base = Path(env.get("CLAUDE_CONFIG_DIR") or home / ".claude") if scope == "user" else root / ".claude"
        settings = base / ("settings.json" if scope == "user" else "settings.local.json")
        mcp = home / ".claude.json" if scope == "user" else root / ".mcp.json"
        return Places(settings, mcp, base / "skills" / "marm" / "SKILL.md")
    if agent == "codex":
        base = Path(env.get("CODEX_HOME") or home / ".codex") if scope == "user" else root / ".codex"
        return Places(base / "hooks.json", base / "config.toml", base / "skills" / "marm" / "SKILL.md")
    base = home / ".gemini" if scope == "user" else root / ".gemini"
    return Places(base / "settings.json", base / "settings.json", base / "skills" / "marm" / "SKILL.md")


Edit = Callable[[str | None], str | None]


def edits(agent: str, scope: str, env: Mapping[str, str], root: Path, exe: str, mcp: bool,
          skill_text: str | None, remove: bool) -> list[tuple[Path, str, Edit]]:
    """``(file, what, text -> new text)`` for one agent; applied in order per file."""
    p = places(agent, scope, env, root)
    out: list[tuple[Path, str, Edit]] = []
    if remove:
        out.append((p.hooks, "hooks", _json_edit(remove_hooks)))
        out.append((p.mcp, "MCP server",
                    _remove_toml if agent == "codex" else _json_edit(remove_mcp)))
        out.append((p.skill, "skill", lambda t: None if t == skill_text else t))
        return out
    out.append((p.hooks, f"hooks for {len(EVENTS)} events",
                _json_edit(lambda d: add_hooks(d, agent, exe))))
    if mcp:
        out.append((p.mcp, "MCP server",
                    _add_toml(exe) if agent == "codex" else _json_edit(lambda d: add_mcp(d, exe))))
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


def same(a: str | None, b: str | None) -> bool:
    """Whether two versions of a config file say the same (JSON compared as data)."""
    if a == b or (a or "").strip() == (b or "").strip():
        return True
    try:
        return load_json(a) == load_json(b)
    except BadInput:
        return False


def hand_files(exe: str = "marm") -> dict[str, str]:
    """The plain hook files in ``hooks/`` for wiring by hand (``marm`` on PATH)."""
    return {
        f"{agent}/{name}": orjson.dumps(
            {"hooks": {k: [g] for k, g in hook_entries(agent, exe).items()}},
            option=orjson.OPT_INDENT_2).decode() + "\n"
        for agent, name in (("claude", "settings.json"), ("codex", "hooks.json"),
                            ("gemini", "settings.json"))
    }


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


def _write(path: Path, text: str | None) -> None:
    if text is None:
        path.unlink(missing_ok=True)
        if path.name == "SKILL.md":
            try:
                path.parent.rmdir()  # the skill's own directory, once empty
            except OSError:
                pass
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".marm-tmp")
    tmp.write_bytes(text.encode("utf-8"))
    tmp.replace(path)


def apply(
    agents: list[str], scope: str, env: Mapping[str, str], root: Path, manifest_path: Path, *,
    mcp: bool, dry_run: bool, uninstall: bool,
) -> tuple[list[FileChange], list[str]]:
    """Install (or uninstall) for ``agents``; returns what changed and notes for the user."""
    notes: list[str] = []
    source = skill_source()
    skill_text = _read(source)
    if skill_text is None and not uninstall:
        notes.append(f"skill not installed: {source} is not part of this installation")
    exe = executable()
    plan: dict[Path, list[tuple[str, str, Edit]]] = {}
    for agent in agents:
        for path, what, edit in edits(agent, scope, env, root, exe, mcp, skill_text, uninstall):
            plan.setdefault(path, []).append((agent, what, edit))
    manifest = load_json(_read(manifest_path)) if manifest_path.exists() else {}
    originals: dict[str, Any] = manifest.setdefault("originals", {})
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
        if uninstall and key in originals and same(after, originals[key]):
            after = originals[key]  # nothing else changed: the original, byte for byte
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
    for path, before, after, change in worked:
        if dry_run or change.action == "unchanged":
            continue
        backup = path.with_name(path.name + ".marm-backup")
        if change.action in ("restored", "deleted") and uninstall:
            backup.unlink(missing_ok=True)  # the original is back: nothing left to keep
        elif before is not None and path.name != "SKILL.md":
            _write(backup, before)
        if uninstall:
            originals.pop(change.path, None)
        else:
            originals.setdefault(change.path, before)
        _write(path, after)
    if not dry_run:
        manifest_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _write(manifest_path, orjson.dumps(manifest, option=orjson.OPT_INDENT_2).decode() + "\n")
    changes = [change for *_, change in worked]
    if not uninstall and "codex" in agents:
        notes.append("Codex runs hooks only once trusted: open /hooks in Codex to trust marm's "
                     "(older versions also need `[features] codex_hooks = true` in config.toml)")
    if not uninstall and "gemini" in agents:
        notes.append("older Gemini CLI versions also need \"tools\": {\"enableHooks\": true}")
    return changes, notes
