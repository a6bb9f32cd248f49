"""The store. Only this package talks SQL, to ``marm.db`` and to ``derived.db``.

- ``core``: the one ``connect`` (file modes, PRAGMAs, ``MARM_DEBUG=sql``) and the one
  unit of work, ``atomic``, every database below goes through
- ``perms``: MARM_HOME tightened to 0700/0600 on every open
- ``backup``: online backup and restore through SQLite's backup API
- ``db``: the durable database (``Store``: open and migrate, ``write``, ``verify``)
- ``migrations``: the schema, versioned by ``PRAGMA user_version``
- ``records``: the frozen dataclasses ops receive
- ``memories``, ``logs``, ``notebook``, ``sessions``: the memory layer
- ``events``: the append-only audit trail
- ``outbox``, ``leases``: durable background work and who is doing it
- ``flags``: runtime settings
- ``vectors``: the vectors of memories and their matrix files
- ``recall_reads``: the recall read model (a recall's candidate set in at most three
  statements, as typed rows)
- ``derived``: the disposable database of derived graphs (``concept_graph``, ``code_graph``)
"""

from marm.store.db import Store, now
from marm.store.records import Actor

__all__ = ["Actor", "Store", "now"]
