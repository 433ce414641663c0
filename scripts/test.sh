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
# Two workers (pytest-xdist), a test file each at a time: most of the suite waits on child
# processes (the daemon, editors, the agent, the runner), so two cores serve two files at once.
# KERNELSCOPE_TEST_WORKERS=0 runs in one process.
.venv/bin/python -m pytest -q -n "${KERNELSCOPE_TEST_WORKERS:-2}" --dist loadfile "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests" >&2
  exit 1
fi
exit "$status"
