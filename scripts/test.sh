#!/usr/bin/env bash
# The test command: set up .venv with the dev and bench extras, lint, type-check, build the
# documentation site (strict: a broken link fails), run the test suite.
# Extra arguments go to pytest (e.g. scripts/test.sh -k memory).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh "dev,bench,postgres,ray"
.venv/bin/ruff check .
scripts/typecheck.sh
site="$(mktemp -d)"
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir "$site"
rm -rf "$site"
set +e
.venv/bin/python -m pytest -q "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests" >&2
  exit 1
fi
exit "$status"
