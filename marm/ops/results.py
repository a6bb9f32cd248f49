"""Result records shared by several ops, and how they read as text.

Every op returns a frozen dataclass. ``dataclasses.asdict`` of it is the JSON the CLI
prints and the structured content MCP returns; ``text()`` is what a person reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from marm.scope import display
from marm.store.records import Memory

#: ``--detail`` levels: how many characters of content a result carries (0 = all).
DETAIL_CHARS = {1: 200, 2: 500, 3: 0}


def cut(text: str, detail: int) -> str:
    limit = DETAIL_CHARS.get(detail, 500)
    if limit and len(text) > limit:
        return text[: limit - 1].rstrip() + "…"
    return text


def one_line(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@dataclass(frozen=True, slots=True)
class MemoryView:
    """A memory as ops return it (content cut by ``--detail``)."""

    id: int
    content: str
    kind: str
    status: str
    session: str | None
    project: str | None
    platform: str | None
    source: str
    recorded_at: str
    valid_from: str | None
    valid_to: str | None
    status_reason: str | None = None
    superseded_by: int | None = None
    score: float | None = None
    retrieval_mode: str | None = None
    flags: list[str] = field(default_factory=list)  # open hygiene proposals: "may be stale: ..."

    @classmethod
    def of(
        cls, m: Memory, detail: int = 3, score: float | None = None, retrieval_mode: str | None = None
    ) -> MemoryView:
        return cls(
            id=m.id, content=cut(m.content, detail), kind=m.kind, status=m.status,
            session=m.session, project=m.project, platform=m.platform, source=m.source,
            recorded_at=m.recorded_at, valid_from=m.valid_from, valid_to=m.valid_to,
            status_reason=m.status_reason, superseded_by=m.superseded_by,
            score=None if score is None else round(score, 6), retrieval_mode=retrieval_mode,
        )

    def line(self) -> str:
        mark = "" if self.status == "active" else f" [{self.status}]"
        mark += "".join(f" [{f}]" for f in self.flags)
        return f"#{self.id} {self.kind}{mark} {self.recorded_at[:10]} {display(self.project)}: {one_line(self.content)}"


@dataclass(frozen=True, slots=True)
class Done:
    """A plain acknowledgement for ops that change one thing."""

    ok: bool
    message: str
    details: dict[str, str] = field(default_factory=dict)

    def text(self) -> str:
        return self.message
