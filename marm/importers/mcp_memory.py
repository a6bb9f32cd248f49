"""From the MCP reference memory server (``@modelcontextprotocol/server-memory``): its
knowledge graph, one JSON object a line (``memory.jsonl``, or ``$MEMORY_FILE_PATH``):
``{"type":"entity","name","entityType","observations":[...]}`` and
``{"type":"relation","from","to","relationType"}`` (``src/memory/index.ts``).

- Each observation is one memory that names its entity (``Alice: prefers tabs``), so it
  is found by the entity's name as well as by its own words.
- Each relation is one memory stating it (``Alice works at Acme``). marm's concept graph
  is derived and disposable (``derived.db``, rebuilt from memories), so it has no durable
  place for an edge of its own; the edge is kept with the memory instead: its metadata
  states the two entities (with the entity type) and the relation, and the concept
  indexer adds exactly that edge whenever it reads the memory, on every rebuild too. A
  retracted relation therefore leaves the graph like any retracted memory. Concept
  verdicts (aliases, removals) are human judgements and the graph file holds none, so
  none are made up.

The server keeps no times and no projects: every memory is global (recall shows it in
every project) and recorded at the file's modification time.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from marm.context import Ctx
from marm.errors import BadInput, NotFound
from marm.importers import ImportSummary, Record, import_records, mtime, stated


def run(ctx: Ctx, path: str | None, since: str | None, dry_run: bool) -> ImportSummary:
    given = path or ctx.env.get("MEMORY_FILE_PATH")
    if not given:
        raise BadInput("give PATH: the memory server keeps memory.jsonl beside its own code unless "
                       "MEMORY_FILE_PATH is set, and it is not set here")
    file = ctx.cwd / Path(given).expanduser()
    if not file.is_file():
        raise NotFound(f"no MCP memory file at {file}")
    lines = _lines(file)
    at = mtime(file)
    return import_records(ctx, "mcp-memory", _records(lines, at), since, dry_run, [str(file)])


def _lines(file: Path) -> list[Any]:
    """The file's JSON lines; a line that is not JSON stays in the list as None (counted
    as unreadable). A file with no entity or relation at all is not the server's."""
    import orjson

    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise BadInput(f"cannot read {file} ({exc.strerror})") from None
    out: list[Any] = []
    for line in raw.splitlines():
        if not line.strip():
            continue
        try:
            out.append(orjson.loads(line))
        except orjson.JSONDecodeError:
            out.append(None)
    if out and not any(isinstance(v, dict) and v.get("type") in ("entity", "relation") for v in out):
        raise BadInput(f"{file} is not an MCP memory file (no entity or relation lines)")
    return out


def _records(lines: list[Any], at: str | None) -> Iterator[Record]:
    types = {v["name"]: str(v.get("entityType") or "") for v in lines
             if isinstance(v, dict) and v.get("type") == "entity" and isinstance(v.get("name"), str)}
    for n, v in enumerate(lines, 1):
        kind = v.get("type") if isinstance(v, dict) else None
        if kind == "entity" and isinstance(v.get("name"), str):
            name = v["name"]
            observations = v.get("observations") if isinstance(v.get("observations"), list) else []
            if not observations:
                yield Record(f"entity:{name}", "", None, at, skip="entity without observations")
            for i, text in enumerate(observations):
                if not isinstance(text, str):
                    yield Record(f"entity:{name}#{i}", "", None, at, skip="observation that is not text")
                    continue
                yield Record(f"entity:{name}#{i}", f"{name}: {text}", None, at, metadata={
                    "entity": name, "entity_type": types.get(name), **stated([(name, types.get(name))])})
        elif kind == "relation" and all(isinstance(v.get(k), str) and v[k] for k in ("from", "to", "relationType")):
            a, p, b = v["from"], v["relationType"], v["to"]
            yield Record(f"relation:{a}|{p}|{b}", f"{a} {p.replace('_', ' ')} {b}", None, at,
                         metadata=stated([(a, types.get(a)), (b, types.get(b))], [(a, p, b)]))
        else:
            yield Record(f"line:{n}", "", None, at, skip="unreadable line")
