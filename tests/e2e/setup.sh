#!/usr/bin/env bash
# Installs the e2e test's node dependencies (the pinned openai client) from
# package-lock.json. Called by .ci/run before ctest; needs node >= 18 and npm.
set -euo pipefail
cd "$(dirname "$0")"
command -v node >/dev/null || { echo "tests/e2e/setup.sh: node is not installed" >&2; exit 1; }
command -v npm >/dev/null || { echo "tests/e2e/setup.sh: npm is not installed" >&2; exit 1; }
npm ci --no-audit --no-fund
