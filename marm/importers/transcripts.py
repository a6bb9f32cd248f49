"""Backfill: past agent sessions replayed through the live capture.

A transcript is read whole (``capture.transcript``, the parser the hooks use), and each
of its turns goes through ``ops.capture.write_turn``, the step the Stop hook takes; so a
backfilled turn yields the same episode and highlight texts the hooks would have
stored, and a turn captured live is found again instead of stored twice (by its
episode's first line in that session, and by content hash).

Where each session goes: the project of the directory it recorded (``cwd``): that
directory's git repository while it exists, else the recorded path itself. Gemini CLI
records only a hash of its project root; it is matched against the directories the
other transcripts and marm's projects name (and a ``.project_root`` file beside the
chats). Times: a turn's memories are recorded at the time of the turn's last record
(when a Stop hook would have run); ``valid_from`` stays unset, as for live capture.
"""

from __future__ import annotations

import hashlib
import os
from collections import deque
from collections.abc import Iterable
from typing import Any
from pathlib import Path

from marm.importers import (DryRun, ImportSummary, Pacer, Tallies, Tally, acting, project_of_directory, scoped,
                            timestamp)
from marm.context import Ctx


def default_places(env: dict[str, str] | None, home: Path) -> list[Path]:
    """Where the agents keep their sessions: Claude Code's projects (also under
    ``CLAUDE_CONFIG_DIR``), Codex's sessions (``CODEX_HOME``), Gemini CLI's saved chats."""
    env = env or {}
    places = [home / ".claude" / "projects"]
    if env.get("CLAUDE_CONFIG_DIR"):
        places.append(Path(env["CLAUDE_CONFIG_DIR"]).expanduser() / "projects")
    places.append(Path(env["CODEX_HOME"]).expanduser() / "sessions" if env.get("CODEX_HOME")
                  else home / ".codex" / "sessions")
    gemini_home = Path(env["GEMINI_CLI_HOME"]).expanduser() if env.get("GEMINI_CLI_HOME") else home
    places.append(gemini_home / ".gemini" / "tmp")
    return list(dict.fromkeys(places))


def files_in(places: Iterable[Path]) -> list[Path]:
    """The transcript files under ``places`` (a file is taken as it is): Claude Code and
    Codex JSON Lines, Gemini chats (``chats/*.json``); sub-agent side chains are not
    turns of their own."""
    found: list[Path] = []
    for place in places:
        if place.is_file():
            found.append(place)
            continue
        if not place.is_dir():
            continue
        for path in sorted(place.rglob("*")):
            if not path.is_file() or "subagents" in path.parts:
                continue
            if path.suffix == ".jsonl" or (path.suffix == ".json" and path.parent.name == "chats"):
                found.append(path)
    return list(dict.fromkeys(found))


def _gemini_cwd(path: Path, project_hash: str | None, candidates: Iterable[str]) -> str | None:
    """The directory a Gemini chat ran in: a ``.project_root`` file beside its chats, or
    the candidate directory whose SHA-256 is the chat's project hash."""
    marker = path.parent.parent / ".project_root"
    try:
        if marker.is_file():
            return marker.read_text(encoding="utf-8").strip() or None
    except OSError:
        pass
    if not project_hash:
        return None
    for candidate in candidates:
        if hashlib.sha256(candidate.encode()).hexdigest() == project_hash:
            return candidate
    return None


def backfill(ctx: Ctx, paths: list[str], since: str | None, dry_run: bool) -> ImportSummary:
    from marm.capture.transcript import read_records, session_of, turns_of
    from marm.store import backfill as reads

    home = Path(ctx.env.get("HOME") or Path.home())
    places = [ctx.cwd / Path(p).expanduser() for p in paths] if paths else default_places(dict(ctx.env), home)
    files = files_in(places)
    store = ctx.store()
    tallies = Tallies()
    parsed = []
    for path in files:
        try:
            records = read_records(str(path), tail=max(path.stat().st_size, 1))
        except OSError:
            records = []
        parsed.append((path, records, session_of(records)))
    candidates = {s.cwd for _, _, s in parsed if s is not None and s.cwd} | set(reads.known_projects(store))
    unreadable = 0
    pacer = Pacer()
    would_add: set[tuple[str, str | None]] = set()   # a dry run's: (hash, project) of what it added
    dry_heads: dict[str, set[str]] = {}               # a dry run's: session -> its episodes' heads
    with ctx.progress(len(parsed), "transcripts") as bar:
        for path, records, info in parsed:
            bar.advance()
            turns = turns_of(records)
            if info is None or not turns:
                unreadable += 1
                continue
            cwd = info.cwd
            if info.agent == "gemini" and not cwd:
                cwd = _gemini_cwd(path, info.project_hash, sorted(candidates))
            project = project_of_directory(cwd)
            tally = tallies.of(project)
            session = info.session_id or path.stem
            fallback = timestamp(os.path.getmtime(path))
            sctx = scoped(ctx, project, cwd=Path(cwd) if cwd else ctx.cwd)
            root = str(sctx.cwd) if cwd else None
            seen = reads.episode_heads(store, session) | dry_heads.get(session, set())
            took = 0
            pending = deque(turns)
            while pending:  # a long session in several transactions (``BATCH_SECONDS`` each)
                pacer.rest()  # transactions back to back would keep a waiting hook out
                try:
                    with acting(ctx, info.agent), store.write(), pacer.holding():
                        before = reads.last_memory_id(store) if dry_run else 0
                        while pending:
                            took += _turn(sctx, session, info.agent, pending.popleft(), since, fallback, root,
                                          seen, tally)
                            if pacer.due():
                                break
                        if dry_run:
                            _repeats(reads.added_after(store, before), session, tally, would_add, dry_heads)
                            raise DryRun
                except DryRun:
                    pass
            tally.turns += took
            tally.sessions += 1 if took else 0
    notes = [f"{unreadable} files held no turns (not a transcript, or empty)"] if unreadable else []
    return ImportSummary.of("transcripts", dry_run, [str(p) for p in places if p.exists()], tallies, notes)


def _turn(sctx: Ctx, session: str, agent: str, turn: Any, since: str | None, fallback: str | None,
          root: str | None, seen: set[str], tally: Tally) -> int:
    """One past turn through the live capture (1), or skipped: before ``since``, or
    captured already (0)."""
    from marm.capture import episode
    from marm.ops.capture import record_of, write_turn

    at = timestamp(turn.ended_at) or timestamp(turn.started_at) or fallback
    if since and at and at < since:
        tally.skip("before --since")
        return 0
    record = record_of(turn)
    body = episode.text(record, root)
    if body and body.split("\n", 1)[0] in seen:
        tally.skip("turn captured already")
        return 0
    done = write_turn(sctx, session, record, agent, recorded_at=at, extra={"imported": "transcript"})
    if done.episode:
        tally.add("episode")
    if done.highlights:
        tally.add("highlight", done.highlights)
    for outcome, n in done.outcomes.items():
        if outcome != "added":
            tally.skip(outcome, n)
    return 1


def _repeats(written: list[tuple[str, str | None, str, str]], session: str, tally: Tally,
             would_add: set[tuple[str, str | None]], dry_heads: dict[str, set[str]]) -> None:
    """A dry run rolls each session back, so a later session does not see what an
    earlier one would have stored: a text it writes again (same hash, same project) was
    counted as added, where the import finds it already here. Count it so, and keep the
    episodes' heads a later file of the same session would find captured."""
    for digest, project, kind, content in written:
        if (digest, project) in would_add:
            tally.unadd("episode" if kind == "episode" else "highlight")
            tally.skip("already here")
            continue
        would_add.add((digest, project))
        if kind == "episode":
            dry_heads.setdefault(session, set()).add(content.split("\n", 1)[0])
