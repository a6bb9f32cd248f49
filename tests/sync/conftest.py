"""Fixtures of the sync tests: a real PostgreSQL database per test (from the cluster
``.ci/run`` starts, named by ``MARM_TEST_PG``), a ``dir:`` remote, and several real
SQLite stores, each with its own MARM_HOME."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.sync.helpers import Stores

NO_PG = ("MARM_TEST_PG is not set: no PostgreSQL server to test against "
         "(.ci/run starts one from the distribution's binaries)")


def _with_db(url: str, db: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + db))


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh, empty database on the test cluster, dropped afterwards."""
    base = os.environ.get("MARM_TEST_PG")
    if not base:
        pytest.skip(NO_PG)
    import psycopg

    name = "t_" + secrets.token_hex(6)
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield _with_db(base, name)
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(params=["pg", "dir"])
def remote_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The same tests over both transports."""
    if request.param == "dir":
        return f"dir:{tmp_path / 'team-remote'}"
    return request.getfixturevalue("pg_url")


@pytest.fixture
def stores(tmp_path: Path, remote_url: str) -> Iterator[Callable[[int], Stores]]:
    made: list[Stores] = []

    def make(n: int) -> Stores:
        s = Stores(tmp_path / f"set{len(made)}", remote_url, n)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


