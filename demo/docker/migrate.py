"""One-shot schema migration for the compose stack (the `migrate` service).

Creates or upgrades every table the API and workers use, so they start on a
ready database instead of racing to migrate on first boot:

* LGOS's PostgreSQL resources (checkpointer, store, run coordinator), by
  opening them once: `open_resources` migrates under an advisory lock;
* DBOS's system schema when LGOS_BACKGROUND=dbos.

Both steps take advisory locks, so running this twice, or alongside a starting
API, is harmless. Reads the same LGOS_* environment as `lgos serve`.

    LGOS_POSTGRES_URI=postgresql://... LGOS_BACKGROUND=dbos python demo/docker/migrate.py
"""

from __future__ import annotations

import asyncio
import sys

from lgos.server.resources import open_resources
from lgos.server.settings import ServerSettings


async def migrate(settings: ServerSettings) -> None:
    async with open_resources(settings):
        pass  # opening is migrating; nothing else to do
    if settings.BACKGROUND == "dbos":
        from lgos.integrations.dbos import migrate as migrate_dbos

        assert settings.POSTGRES_URI is not None
        await migrate_dbos(settings.POSTGRES_URI)


def main() -> int:
    settings = ServerSettings()
    if not settings.POSTGRES_URI:
        print("migrate: LGOS_POSTGRES_URI is not set; nothing to migrate", file=sys.stderr)
        return 2
    asyncio.run(migrate(settings))
    print(f"migrate: schema ready (background engine: {settings.BACKGROUND})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
