"""Names -> code symbols, for other layers (the concept graph links an entity that
names a code symbol, such as ``parse_config`` or ``Store.open``, to its definitions)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from marm.store import code_graph
from marm.store.code_graph import SymbolLink

__all__ = ["SymbolLink", "symbols_named"]


def symbols_named(home: Path, names: Iterable[str], limit: int = 5) -> dict[str, list[SymbolLink]]:
    """For each name that some indexed repository defines: its symbols, most central
    first. A dotted name matches a qualified name. Empty when nothing is indexed."""
    wanted = sorted({n.strip() for n in names if n and n.strip()})
    if not wanted or not code_graph.exists(home):
        return {}
    graph = code_graph.CodeGraph.open(home)
    try:
        return graph.symbols_named(wanted, limit)
    finally:
        graph.close()
