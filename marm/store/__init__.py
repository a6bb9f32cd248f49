"""The durable store. Only this package talks SQL to ``marm.db``.

- ``db``: opening, PRAGMAs, transactions (``Store``)
- ``migrations``: the schema, versioned by ``PRAGMA user_version``
- ``records``: the frozen dataclasses ops receive
- ``memories``, ``logs``, ``notebook``, ``sessions``: the memory layer
- ``events``: the append-only audit trail
- ``outbox``, ``leases``: durable background work and who is doing it
- ``flags``: runtime settings
- ``derived``: the disposable database of derived graphs
"""

from marm.store.db import Store, now
from marm.store.records import Actor

__all__ = ["Actor", "Store", "now"]
