#!/usr/bin/env bash
# Installs (Debian's package) and starts a PostgreSQL server on loopback for the store tests,
# and creates the role and database they use. Prints the URL to use on stdout.
#   export KERNELSCOPE_TEST_PG_URL="$(scripts/postgres.sh)"
set -euo pipefail
user=kernelscope
password=kernelscope
db=kernelscope_test
port="${KERNELSCOPE_PG_PORT:-5432}"

if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ]; then
    echo "postgres.sh: PostgreSQL is not installed and this is not root" >&2
    exit 1
  fi
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql) >&2
fi
version="$(ls /usr/lib/postgresql | sort -V | tail -1)"
if ! pg_lsclusters -h | awk '{print $1" "$2}' | grep -q "^$version main$"; then
  pg_createcluster "$version" main -p "$port" >&2
fi
status="$(pg_lsclusters -h | awk -v v="$version" '$1==v && $2=="main" {print $4}')"
if [ "$status" != "online" ]; then
  pg_ctlcluster "$version" main start >&2
fi
actual_port="$(pg_lsclusters -h | awk -v v="$version" '$1==v && $2=="main" {print $3}')"
for _ in $(seq 1 30); do
  su postgres -c "psql -p $actual_port -tAc 'select 1'" >/dev/null 2>&1 && break
  sleep 1
done
su postgres -c "psql -p $actual_port -tAc \"select 1 from pg_roles where rolname='$user'\"" | grep -q 1 ||
  su postgres -c "psql -p $actual_port -qc \"create role $user login superuser password '$password'\"" >&2
su postgres -c "psql -p $actual_port -tAc \"select 1 from pg_database where datname='$db'\"" | grep -q 1 ||
  su postgres -c "createdb -p $actual_port -O $user $db" >&2
echo "postgresql+psycopg://$user:$password@127.0.0.1:$actual_port/$db"
