"""Typed records the store hands to ops. Built only inside ``marm.store``.

They are frozen: an op that wants a change asks the store for it, and the store
records an event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Actor:
    """Who is acting: the surface (cli, mcp, hook:<event>, import) and the agent platform."""

    source: str = "cli"
    platform: str | None = None


@dataclass(frozen=True, slots=True)
class Memory:
    id: int
    content: str
    content_hash: str
    kind: str
    session: str | None
    project: str | None
    platform: str | None
    source: str
    recorded_at: str
    valid_from: str | None
    valid_to: str | None
    status: str
    status_reason: str | None
    superseded_by: int | None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LogEntry:
    id: int
    memory_id: int
    entry_date: str | None
    topic: str | None
    summary: str
    session: str | None
    project: str | None
    recorded_at: str


@dataclass(frozen=True, slots=True)
class NotebookEntry:
    name: str
    content: str
    created_at: str
    updated_at: str
    active_in: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Session:
    name: str
    project: str | None
    platform: str | None
    created_at: str
    last_seen_at: str
    memories: int = 0


@dataclass(frozen=True, slots=True)
class Event:
    id: int
    at: str
    action: str
    entity: str
    entity_id: str
    source: str
    platform: str | None
    session: str | None
    project: str | None
    reason: str | None
    before_hash: str | None
    after_hash: str | None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Task:
    """One outbox row claimed by a drain."""

    id: int
    kind: str
    target: str
    content_hash: str | None
    attempts: int
    lease_token: str


@dataclass(frozen=True, slots=True)
class Hit:
    """A memory found by a recall lane, with the lane's score."""

    memory: Memory
    score: float
    retrieval_mode: str
    meaning: float | None = None   # hybrid: cosine with the best chunk; None: no vector yet
