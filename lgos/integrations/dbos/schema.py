"""DBOS's schema and LGOS's worker table, and the SQLAlchemy URL DBOS wants."""

from __future__ import annotations

import asyncio

from dbos import DBOS
from psycopg import AsyncConnection
from psycopg.conninfo import conninfo_to_dict
from sqlalchemy.engine import URL

from lgos.integrations.postgres.liveness import WORKERS_TABLE
from lgos.integrations.postgres.locks import advisory_unlock, wait_for_advisory_lock

_MIGRATION_LOCK = "lgos.dbos.migrations"
_MIGRATION_LOCK_TIMEOUT_SECONDS = 600.0


def sqlalchemy_url(uri: str) -> str:
    """DBOS wants a SQLAlchemy URL; LGOS_POSTGRES_URI may be a URL or a libpq key/value string.
    The driver is psycopg 3 (installed with lgos[postgres]), whatever the operator wrote."""
    params = {key: str(value) for key, value in conninfo_to_dict(uri).items()}
    port = params.pop("port", None)
    url = URL.create(
        "postgresql+psycopg",
        username=params.pop("user", None),
        password=params.pop("password", None),
        host=params.pop("host", None),
        port=int(port) if port else None,
        database=params.pop("dbname", None),
        query=params,
    )
    return url.render_as_string(hide_password=False)


async def migrate(uri: str) -> None:
    """Create or upgrade DBOS's schema, one process at a time (API replicas and workers all
    start by calling this, and `DBOSClient` never migrates by itself)."""
    async with await AsyncConnection.connect(uri, autocommit=True) as conn:
        await wait_for_advisory_lock(
            conn, _MIGRATION_LOCK, limit_seconds=_MIGRATION_LOCK_TIMEOUT_SECONDS
        )
        try:
            await asyncio.to_thread(DBOS.migrate, sqlalchemy_url(uri))
            await conn.execute(WORKERS_TABLE)
        finally:
            await advisory_unlock(conn, _MIGRATION_LOCK)
