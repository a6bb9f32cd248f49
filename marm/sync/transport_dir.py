"""The directory transport (``dir:PATH``): the same protocol as files a git repository
can carry without merge conflicts.

Layout::

    PATH/chunks/<sha256>.jsonl     one push: wire events, one JSON object a line
    PATH/manifests/<origin>.jsonl  append-only: {"chunk": sha, "first": seq, "last": seq, "events": n}
    PATH/erased/<sha256>           the chunk that replaced this one (after an erasure)

- A chunk is named by the hash of its bytes and never changes. Each store appends only
  to its own manifest, so two clones never edit the same line of the same file: git
  merges their work as additions.
- Pushing again the events a chunk already holds adds nothing (the sequences a
  manifest covers are skipped; a rewound push reads its own chunks to be sure).
- Erasure: a pushed forget rewrites every chunk holding a create of that memory (or of
  the same text in its project) without the text, under its new hash; ``erased/OLD``
  points readers to the new chunk and the old file is deleted. The text then is in no
  file of the directory (a git history keeps what was committed before; rewriting it is
  the repository owner's call).
- Readers take the events of the other origins' manifest lines they have not read yet
  and apply them in (time, origin, sequence) order. The cursor is, per origin, how many
  manifest lines were read. A torn last line (a push killed while appending) is ignored
  until it is whole.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import orjson

from marm.sync.protocol import WireEvent, encode, erase

CREATES = ("memory.create", "memory.import")


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class DirTransport:
    def __init__(self, path: str) -> None:
        self.root = Path(path).expanduser()
        for sub in ("chunks", "manifests", "erased"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)

    # -- reading -----------------------------------------------------------------------

    def _manifest(self, origin: str) -> list[dict[str, Any]]:
        path = self.root / "manifests" / f"{origin}.jsonl"
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return []
        lines = []
        for line in raw.split(b"\n")[:-1]:  # the part after the last newline is not whole yet
            try:
                lines.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                break
        return lines

    def _origins(self) -> list[str]:
        return sorted(p.stem for p in (self.root / "manifests").glob("*.jsonl"))

    def _resolve(self, sha: str) -> str:
        for _ in range(10_000):
            redirect = self.root / "erased" / sha
            if (self.root / "chunks" / f"{sha}.jsonl").exists() or not redirect.exists():
                return sha
            sha = redirect.read_text().strip()
        return sha

    def _chunk(self, sha: str) -> list[WireEvent]:
        for _ in range(3):  # an erasure may replace it while we look
            current = self._resolve(sha)
            try:
                raw = (self.root / "chunks" / f"{current}.jsonl").read_bytes()
            except FileNotFoundError:
                continue
            return [orjson.loads(line) for line in raw.splitlines() if line.strip()]
        return []

    def pull(self, cursor: str, origin: str, limit: int) -> tuple[list[WireEvent], str]:
        read: dict[str, int] = orjson.loads(cursor) if cursor else {}
        events: list[WireEvent] = []
        for other in self._origins():
            if other == origin:
                continue
            lines = self._manifest(other)
            for line in lines[read.get(other, 0):]:
                events.extend(self._chunk(line["chunk"]))
            read[other] = len(lines)
        events.sort(key=lambda e: (e["at"], e["origin"], e["seq"]))
        return events, orjson.dumps(read, option=orjson.OPT_SORT_KEYS).decode()

    def behind(self, cursor: str, origin: str) -> int:
        read: dict[str, int] = orjson.loads(cursor) if cursor else {}
        return sum(line.get("events", 0) for other in self._origins() if other != origin
                   for line in self._manifest(other)[read.get(other, 0):])

    # -- writing -----------------------------------------------------------------------

    def push(self, events: list[WireEvent]) -> int:
        if not events:
            return 0
        origin = events[0]["origin"]
        assert all(e["origin"] == origin for e in events), "a store pushes only its own events"
        lines = self._manifest(origin)
        top = max((line["last"] for line in lines), default=0)
        if any(e["seq"] <= top for e in events):  # a rewound push: look at what is there
            have = {e["seq"] for line in lines for e in self._chunk(line["chunk"])}
            events = [e for e in events if e["seq"] not in have]
        if not events:
            return 0
        events = sorted(events, key=lambda e: e["seq"])
        data = b"".join(encode(e) + b"\n" for e in events)
        sha = hashlib.sha256(data).hexdigest()
        _write_atomic(self.root / "chunks" / f"{sha}.jsonl", data)
        entry = {"chunk": sha, "first": events[0]["seq"], "last": events[-1]["seq"], "events": len(events)}
        with open(self.root / "manifests" / f"{origin}.jsonl", "ab") as fh:
            fh.write(orjson.dumps(entry) + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
        forgets = [e for e in events if e["action"] == "memory.forget"]
        if forgets:
            self._erase(forgets)
        return len(events)

    def _erase(self, forgets: list[WireEvent]) -> None:
        ids = {f["memory"] for f in forgets}
        texts = {(f.get("project"), (f.get("data") or {}).get("content_hash")) for f in forgets}

        def hit(e: WireEvent) -> bool:
            data = e.get("data") or {}
            return e["action"] in CREATES and "content" in data and (
                e["memory"] in ids or (e.get("project"), data.get("content_hash")) in texts)

        for path in sorted((self.root / "chunks").glob("*.jsonl")):
            old = path.stem
            try:
                events = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
            except FileNotFoundError:
                continue
            if not any(hit(e) for e in events):
                continue
            data = b"".join(encode(erase(e) if hit(e) else e) + b"\n" for e in events)
            new = hashlib.sha256(data).hexdigest()
            _write_atomic(self.root / "chunks" / f"{new}.jsonl", data)
            _write_atomic(self.root / "erased" / old, new.encode())
            path.unlink(missing_ok=True)

    def close(self) -> None:
        pass
