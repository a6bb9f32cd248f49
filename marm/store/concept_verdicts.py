"""Human verdicts on the concept graph, in the durable database.

They are keyed on normalised names (values), never on graph row ids, so they still
apply after the disposable graph is dropped and rebuilt:

- an alias (``merge A B``): the name B resolves to A on every extraction;
- a suppression (``remove NAME``): the name is never extracted again;
- a dismissal (``dismiss A B``): the pair is not proposed as duplicates again.

Every write appends an event in the same transaction.
"""

from __future__ import annotations

from dataclasses import dataclass

from marm.store import events
from marm.store.db import Store, now


@dataclass(frozen=True, slots=True)
class Verdicts:
    """A snapshot of every verdict, read once per extraction batch."""

    aliases: dict[str, str]
    suppressed: frozenset[str]
    dismissed: frozenset[tuple[str, str]]

    def resolve(self, key: str) -> str | None:
        """The canonical name of ``key`` (following alias chains), or None if suppressed."""
        seen = {key}
        while key in self.aliases and key not in self.suppressed:
            key = self.aliases[key]
            if key in seen:
                break
            seen.add(key)
        return None if key in self.suppressed else key

    def is_dismissed(self, a: str, b: str) -> bool:
        return pair(a, b) in self.dismissed


def pair(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a < b else (b, a)


def load(store: Store) -> Verdicts:
    conn = store.conn
    return Verdicts(
        aliases=dict(conn.execute("SELECT alias, canonical FROM concept_aliases")),
        suppressed=frozenset(r[0] for r in conn.execute("SELECT name FROM concept_suppressions")),
        dismissed=frozenset((a, b) for a, b in conn.execute("SELECT a, b FROM concept_dismissals")),
    )


def add_alias(store: Store, alias: str, canonical: str) -> None:
    """Record that ``alias`` names ``canonical``; names aliased to ``alias`` follow it."""
    with store.write() as conn:
        before = conn.execute(
            "SELECT canonical FROM concept_aliases WHERE alias = ?", (alias,)
        ).fetchone()
        conn.execute(
            "INSERT INTO concept_aliases (alias, canonical, at) VALUES (?,?,?) ON CONFLICT (alias)"
            " DO UPDATE SET canonical = excluded.canonical, at = excluded.at",
            (alias, canonical, now()),
        )
        conn.execute("DELETE FROM concept_aliases WHERE alias = ?", (canonical,))
        events.append(
            store,
            "concept.merge",
            "concept",
            alias,
            detail={
                "alias": alias,
                "canonical": canonical,
                "before": before[0] if before else None,
            },
        )


def suppress(store: Store, name: str, reason: str | None) -> None:
    with store.write() as conn:
        conn.execute(
            "INSERT INTO concept_suppressions (name, reason, at) VALUES (?,?,?) ON CONFLICT (name)"
            " DO UPDATE SET reason = excluded.reason, at = excluded.at",
            (name, reason, now()),
        )
        events.append(store, "concept.suppress", "concept", name, reason=reason)


def dismiss(store: Store, a: str, b: str) -> None:
    first, second = pair(a, b)
    with store.write() as conn:
        conn.execute(
            "INSERT OR REPLACE INTO concept_dismissals (a, b, at) VALUES (?,?,?)",
            (first, second, now()),
        )
        events.append(
            store,
            "concept.dismiss",
            "concept",
            f"{first}|{second}",
            detail={"a": first, "b": second},
        )
