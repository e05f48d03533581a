#!/usr/bin/env bash
# Makes sure the PostgreSQL server the tests use answers on 127.0.0.1:5432 as the `postgres`
# user without a password, with room for the suite's connections. Idempotent and quick when all
# of that is already true: it only checks, then exits.
#
# On a fresh machine it installs Debian's server when it is missing, creates a cluster when there
# is none, allows password-less loopback access (test machines only: the cluster is the
# machine's own, and nothing but loopback is opened), raises max_connections and starts it.
set -euo pipefail

URI="${LGOS_TEST_POSTGRES_URI:-postgresql://postgres@127.0.0.1:5432/postgres}"
# One pytest of the suite peaked at 77 connections (workers, two APIs and the Hatchet engine each
# hold pools); `just test` runs two at once (scripts/test.sh), and a benchmark run beside the tests
# brings pools of its own: 300 ran out once with all three.
WANTED_CONNECTIONS=600
MARKER="# lgos-test: loopback without password"

fail() {
    echo "setup-postgres: $*" >&2
    exit 1
}

answers() {
    local connections
    connections=$(PGCONNECT_TIMEOUT=5 psql "$URI" -tAc "SHOW max_connections" 2>/dev/null) || return 1
    [ "${connections:-0}" -ge "$WANTED_CONNECTIONS" ]
}

if command -v psql >/dev/null 2>&1 && answers; then
    exit 0
fi

if [ -n "${LGOS_TEST_POSTGRES_URI:-}" ]; then
    fail "LGOS_TEST_POSTGRES_URI does not answer (or has fewer than $WANTED_CONNECTIONS connections): $URI"
fi
if [ "$(id -u)" -ne 0 ]; then
    fail "PostgreSQL does not answer on 127.0.0.1:5432 as user postgres without a password, and only root can set it up here. Start a server with that access (max_connections >= $WANTED_CONNECTIONS), or point LGOS_TEST_POSTGRES_URI at one."
fi

if ! command -v pg_lsclusters >/dev/null 2>&1 || [ -z "$(ls /usr/lib/postgresql 2>/dev/null)" ]; then
    command -v apt-get >/dev/null 2>&1 || fail "no PostgreSQL server and no apt-get to install one"
    echo "setup-postgres: installing PostgreSQL from Debian"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi

# The cluster on port 5432, or a new one for the newest installed server.
read -r version cluster _ < <(pg_lsclusters -h | awk '$3 == 5432 {print $1, $2, $4}') || true
if [ -z "${version:-}" ]; then
    version=$(ls /usr/lib/postgresql | sort -n | tail -1)
    cluster=main
    echo "setup-postgres: creating cluster $version/$cluster on port 5432"
    pg_createcluster --port 5432 "$version" "$cluster" >/dev/null
fi
conf_dir="/etc/postgresql/$version/$cluster"

changed=0
if ! grep -qF "$MARKER" "$conf_dir/pg_hba.conf"; then
    # First matching line wins in pg_hba.conf, so these go on top.
    {
        echo "$MARKER"
        echo "host all all 127.0.0.1/32 trust"
        echo "host all all ::1/128 trust"
        cat "$conf_dir/pg_hba.conf"
    } >"$conf_dir/pg_hba.conf.new"
    chown --reference="$conf_dir/pg_hba.conf" "$conf_dir/pg_hba.conf.new"
    chmod --reference="$conf_dir/pg_hba.conf" "$conf_dir/pg_hba.conf.new"
    mv "$conf_dir/pg_hba.conf.new" "$conf_dir/pg_hba.conf"
    changed=1
fi
mkdir -p "$conf_dir/conf.d"
settings="$conf_dir/conf.d/lgos-test.conf"
want_settings="max_connections = $WANTED_CONNECTIONS
listen_addresses = 'localhost'"
if [ "$(cat "$settings" 2>/dev/null)" != "$want_settings" ]; then
    echo "$want_settings" >"$settings"
    changed=1
fi

status=$(pg_lsclusters -h | awk -v v="$version" -v c="$cluster" '$1 == v && $2 == c {print $4}')
if [ "$status" = "online" ] && [ "$changed" -eq 1 ]; then
    echo "setup-postgres: restarting $version/$cluster with the test settings"
    pg_ctlcluster "$version" "$cluster" restart
elif [ "$status" != "online" ]; then
    echo "setup-postgres: starting $version/$cluster"
    pg_ctlcluster "$version" "$cluster" start
fi

# pg_ctlcluster waits until the server accepts connections.
answers || fail "PostgreSQL $version/$cluster runs but does not answer at $URI with $WANTED_CONNECTIONS connections; see /var/log/postgresql/postgresql-$version-$cluster.log"
