"""Embedding ops: what is embedded with which model, and re-embedding after a change."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from marm import embed as encoder_setup
from marm.context import Ctx
from marm.embed.status import check
from marm.ops.registry import Param, op
from marm.store import flags, memories, outbox, vectors


@dataclass(frozen=True, slots=True)
class EmbedResult:
    model: str
    available: bool
    detail: str
    memories: int
    embedded: int                       # memories with vectors of the configured model
    pending: int                        # embed tasks waiting for a drain
    parked: int
    other_models: dict[str, int] = field(default_factory=dict)
    queued: int = 0                     # tasks queued by --reindex
    deleted_vectors: int = 0            # vectors of other models dropped by --reindex
    vector_bytes: int = 0               # the vector files on disk (every model)

    def text(self) -> str:
        state = self.detail if self.available else f"{self.model} is unavailable: {self.detail}"
        lines = [f"model      {state}",
                 f"embedded   {self.embedded} of {self.memories} memories; {self.pending} pending"
                 + (f", {self.parked} parked" if self.parked else "")]
        if self.vector_bytes:
            per = self.vector_bytes // max(1, self.embedded + sum(self.other_models.values()))
            lines.append(f"disk       {self.vector_bytes / 1e6:.1f} MB of vectors, {per} bytes per embedded memory")
        for model, n in self.other_models.items():
            lines.append(f"stale      {n} memories have vectors of {model} only "
                         "(`marm embed --reindex` replaces them)")
        if self.queued or self.deleted_vectors:
            lines.append(f"reindex    queued {self.queued} memories, dropped {self.deleted_vectors} "
                         "vectors of other models; `marm drain` embeds them")
        return "\n".join(lines)


@op("embed", mcp=None, idempotent=True)
def embed(
    ctx: Ctx,
    reindex: Annotated[bool, Param("queue every memory that lacks a vector of the configured "
                                   "model and drop vectors of other models")] = False,
    all_memories: Annotated[bool, Param("with --reindex: re-embed every memory, even current ones")] = False,
) -> EmbedResult:
    """Show what is embedded with which model; `--reindex` after changing `embed.model`.

    Vectors are computed by `marm drain` (or a hybrid recall, a few at a time); this
    never loads the model itself.

    Examples:
      marm embed
      marm embed --reindex
    """
    store = ctx.store()
    cfg = encoder_setup.settings(ctx.home, flags.all_saved(store), ctx.env)
    queued = deleted = 0
    if reindex:
        deleted = vectors.delete_other_models(store, ctx.home, cfg.model)
        queued = vectors.enqueue_reindex(store, cfg.model, everything=all_memories)
    ok, detail = check(cfg)
    per_model = {m: n for m, _dim, _v, n in vectors.by_model(store)}
    total = memories.counts(store)["total"]
    counts = outbox.counts(store).get("embed", {"pending": 0, "parked": 0})
    return EmbedResult(
        cfg.model, ok, detail, total, per_model.pop(cfg.model, 0), counts["pending"],
        counts["parked"], per_model, queued, deleted, vectors.disk_bytes(ctx.home),
    )
