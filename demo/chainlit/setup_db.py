"""Create the Chainlit database if it is missing and apply schema.sql (idempotent).

Usage: python setup_db.py [DATABASE_URL]          (default: $DATABASE_URL)
       python setup_db.py --drop DATABASE_URL   (drop it; the tests use throwaway databases)

Runs in the Chainlit environment (it needs only asyncpg). The database named in the URL is
created through the server's `postgres` maintenance database when it does not exist yet.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg

SCHEMA = Path(__file__).with_name("schema.sql")


async def ensure_database(url: str) -> None:
    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    if not name:
        raise SystemExit(f"no database name in {url!r}")
    maintenance = urlunsplit(parts._replace(path="/postgres"))
    conn = await asyncpg.connect(maintenance)
    try:
        exists = await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name)
        if not exists:
            # Identifiers cannot be bound as parameters; quote the name ourselves.
            quoted = '"' + name.replace('"', '""') + '"'
            # Another launcher may create it at the same moment: that is fine too.
            with contextlib.suppress(asyncpg.DuplicateDatabaseError):
                await conn.execute(f"CREATE DATABASE {quoted}")
    finally:
        await conn.close()


async def apply_schema(url: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        # Serialize concurrent launchers: CREATE ... IF NOT EXISTS can still race.
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext('lgos_chainlit_schema'))")
            await conn.execute(SCHEMA.read_text())
    finally:
        await conn.close()


async def drop_database(url: str) -> None:
    parts = urlsplit(url)
    quoted = '"' + parts.path.lstrip("/").replace('"', '""') + '"'
    conn = await asyncpg.connect(urlunsplit(parts._replace(path="/postgres")))
    try:
        await conn.execute(f"DROP DATABASE IF EXISTS {quoted} WITH (FORCE)")
    finally:
        await conn.close()


async def main() -> None:
    if sys.argv[1:2] == ["--drop"]:
        await drop_database(sys.argv[2])
        return
    url = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("DATABASE_URL", "")
    if not url:
        raise SystemExit("set DATABASE_URL or pass the URL as an argument")
    await ensure_database(url)
    await apply_schema(url)
    print(f"chainlit schema ready in {urlsplit(url).path.lstrip('/')}")


if __name__ == "__main__":
    asyncio.run(main())
