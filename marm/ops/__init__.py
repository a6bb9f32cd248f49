"""Every operation marm offers, registered once in ``REGISTRY``.

``load()`` imports the op modules (each registers its ops at import). The modules are
light: heavy libraries are imported inside the ops that need them. A CLI process that
runs one command imports only the module that defines it (``load(word)``), so a new
module costs ``marm log`` nothing; ``COMMANDS`` says which module that is, and a test
checks it against what the modules register.
"""

from __future__ import annotations

import importlib

from marm.ops.registry import REGISTRY, Op, Param, op

#: Op module -> its top-level commands with their one-line help, in `marm --help`
#: order. `marm --help` is printed from this table without importing any op module, and
#: a process that runs one command imports only the module defining it. A test checks
#: the table against what the modules register.
COMMANDS: dict[str, dict[str, str]] = {
    "marm.ops.memory": {
        "log": "Store a memory (a decision, fix, note, or a dated log entry).",
        "recall": "Find memories by exact text or by meaning.",
        "show": "Show one memory in full, with its provenance.",
        "delete": "Delete a memory, a log entry (with its memory), a notebook entry, or a session.",
        "summary": "A deterministic digest of what is stored: grouped by kind, newest first.",
        "log-show": "List log entries, newest first (entries of retracted memories are left out).",
    },
    "marm.ops.review": {
        "doubt": "Mark a memory as doubted: recall still returns it, marked [doubted].",
        "retract": "Retract a memory: recall leaves it out, and the same text is refused later.",
        "supersede": "Replace an old memory by a newer one: recall returns the newer one.",
        "restore": "Make a doubted, retracted or superseded memory active again.",
        "forget": "Erase a memory's text for good (privacy): nothing can bring it back.",
        "history": "Every event of a memory, oldest first.",
    },
    "marm.ops.hygiene": {
        "review": "Review what the drain found: near-duplicates, reversed and possibly stale memories.",
        "compact": "Fold old episodes into one summary memory per session and week.",
    },
    "marm.ops.summarize": {
        "summarize": "Write the summary of a cluster of old episodes yourself, instead of compaction's extract.",
    },
    "marm.ops.notebook": {
        "notebook": "Keep named, reusable instructions; `use` activates one for a session.",
        "sessions": "List sessions, most recently used first (* marks the active one).",
        "session": "Choose the session new memories are tagged with.",
    },
    "marm.ops.transfer": {
        "export": "Write the store as JSON lines on standard output: `marm export > backup.jsonl`.",
        "import": "Read a `marm export` file back into this store, keeping ids and times.",
    },
    "marm.ops.backup": {
        "backup": "Copy the whole store to FILE, consistently, while other marm processes write (mode 0600).",
    },
    "marm.ops.sync": {
        "remote": "Remotes to sync with: a PostgreSQL server or a directory (add, list, remove).",
        "share": "Share a project's memory with the remotes: nothing syncs until a project is shared.",
        "sync": "Push this store's events of the shared projects, then pull the others'.",
    },
    "marm.ops.system": {
        "status": "Counts, background backlog, running drains, database and optional parts.",
        "doctor": "Check the store and the optional parts, and advise; changes nothing.",
        "config": "Show and save runtime settings.",
        "completion": "Print the shell completion script for bash, zsh or fish.",
    },
    "marm.ops.stats": {
        "stats": "What the hooks cost: runs, wall time, characters injected, captures, store growth.",
    },
    "marm.ops.background": {
        "drain": "Work through queued background tasks (embeddings, concepts, code re-index).",
    },
    "marm.ops.embedding": {
        "embed": "Show what is embedded with which model; `--reindex` after changing `embed.model`.",
    },
    "marm.ops.concepts": {
        "concepts": "The concept graph: what memories are about, and how those things relate.",
    },
    "marm.ops.code": {
        "code": "Index repositories with tree-sitter; look up, trace and weigh code.",
    },
    "marm.ops.agents": {
        "hook": "Answer an agent's hook: read its JSON on stdin, reply in its JSON on stdout.",
        "init": "Install marm's hooks, skill (and with --mcp its MCP server) into your agents.",
    },
    "marm.ops.serve": {
        "mcp": "Serve marm's operations as MCP tools over STDIO, until the client disconnects.",
    },
    "marm.ops.view": {
        "view": "See and fix your memory in a browser: one self-contained HTML page, no daemon.",
    },
}
MODULES = tuple(COMMANDS)


def load(word: str | None = None) -> dict[tuple[str, ...], Op]:
    """The registry: every op, or (given a command's first word that some module
    defines) just that module's ops."""
    owners = [m for m, words in COMMANDS.items() if word in words] if word else []
    for name in owners or MODULES:
        importlib.import_module(name)
    return REGISTRY


__all__ = ["COMMANDS", "MODULES", "REGISTRY", "Op", "Param", "load", "op"]
