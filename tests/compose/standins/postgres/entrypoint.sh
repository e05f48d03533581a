#!/usr/bin/env bash
# The official image's environment contract, on Debian's PostgreSQL: initdb on an empty PGDATA
# with POSTGRES_USER as the superuser (password POSTGRES_PASSWORD, scram) and POSTGRES_DB created,
# then `postgres` as that user, listening on every address.
set -euo pipefail

as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }

if [ "${1:-}" = postgres ]; then
    shift
    user=${POSTGRES_USER:-postgres}
    db=${POSTGRES_DB:-$user}
    [ -n "${POSTGRES_PASSWORD:-}" ] || { echo "POSTGRES_PASSWORD is not set" >&2; exit 1; }
    mkdir -p "$PGDATA" && chown postgres:postgres "$PGDATA" && chmod 0700 "$PGDATA"
    if [ ! -s "$PGDATA/PG_VERSION" ]; then
        pwfile=$(mktemp) && printf '%s' "$POSTGRES_PASSWORD" > "$pwfile" && chown postgres "$pwfile"
        # UTF-8 as in the official image (its LANG is en_US.utf8): the minimal base has no locale,
        # and initdb would pick SQL_ASCII, whose text psycopg returns as bytes (DBOS then fails).
        as_postgres initdb -D "$PGDATA" -U "$user" --pwfile="$pwfile" --auth-local=trust \
            --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 >/dev/null
        rm -f "$pwfile"
        echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
        if [ "$db" != postgres ]; then
            as_postgres postgres --single -D "$PGDATA" -c listen_addresses='' postgres \
                <<< "CREATE DATABASE \"$db\" OWNER \"$user\";" >/dev/null
        fi
        echo "stand-in postgres: initialised $PGDATA (user $user, database $db)"
    fi
    exec setpriv --reuid=postgres --regid=postgres --init-groups \
        postgres -D "$PGDATA" -c listen_addresses='*' "$@"
fi
exec "$@"
