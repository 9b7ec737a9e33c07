#!/usr/bin/env bash
# `npm test`: the same setup as `npm start`, then every test of every app and package against a private
# NATS, a private Temporal dev server, a fresh test database and Redis database 1.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
setup_all

free_port() { node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{process.stdout.write(String(s.address().port));s.close()})"; }
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

TEST_DIR="$DATA_DIR/test"
rm -rf "$TEST_DIR" && mkdir -p "$TEST_DIR/nats"

NATS_PORT="$(free_port)"
# Tests that start a throwaway nats-server of their own use the same build.
export NATS_SERVER_BIN="$(nats_server_bin)"
# The generated configuration with fresh passwords: every service a test starts connects as its own user.
# Only here, a client without credentials (a test's own connection) is the admin user.
# shellcheck disable=SC2046
export $(node "$ROOT/scripts/lib/nats-config.mjs" --passwords)
node "$ROOT/scripts/lib/nats-config.mjs" --out "$TEST_DIR/nats.conf" --no-auth-user admin
"$(nats_server_bin)" -c "$TEST_DIR/nats.conf" -a 127.0.0.1 -p "$NATS_PORT" -js -sd "$TEST_DIR/nats" -l "$TEST_DIR/nats.log" &
PIDS+=($!)
TEMPORAL_PORT="$(free_port)"
# The workflow tests start dev servers of their own (with a dynamic config) from the same build.
export TEMPORAL_CLI_BIN="$TEMPORAL_BIN"
"$TEMPORAL_BIN" server start-dev --headless --ip 127.0.0.1 --port "$TEMPORAL_PORT" --log-level error >"$TEST_DIR/temporal.log" 2>&1 &
PIDS+=($!)

export TEST_DATABASE_URL="${TEST_DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/switchboard_test}"
log "recreating the test database"
TEST_DB_NAME="$(printf '%s' "$TEST_DATABASE_URL" | sed -E 's#.*/([^/?]+)(\?.*)?$#\1#')"
ADMIN_URL="$(printf '%s' "$TEST_DATABASE_URL" | sed -E 's#/[^/?]+(\?.*)?$#/postgres#')"
psql -q "$ADMIN_URL" -c "DROP DATABASE IF EXISTS \"$TEST_DB_NAME\" WITH (FORCE)" >/dev/null
# Lanes a stopped run left behind (copies of the test database, see packages/testing/src/lanes.ts).
for lane_db in $(psql -At "$ADMIN_URL" -c "SELECT datname FROM pg_database WHERE datname LIKE '${TEST_DB_NAME}\_lane\_%'"); do
  psql -q "$ADMIN_URL" -c "DROP DATABASE IF EXISTS \"$lane_db\" WITH (FORCE)" >/dev/null
done
migrate "$TEST_DATABASE_URL"

export TEST_REDIS_URL="${TEST_REDIS_URL:-redis://127.0.0.1:6379/1}"
redis-cli -u "$TEST_REDIS_URL" FLUSHDB >/dev/null

wait_port 127.0.0.1 "$NATS_PORT" 10 "test NATS"
wait_port 127.0.0.1 "$TEMPORAL_PORT" 60 "test Temporal"
export TEST_NATS_URL="nats://127.0.0.1:$NATS_PORT"
export TEST_TEMPORAL_ADDRESS="127.0.0.1:$TEMPORAL_PORT"
# Several stacks boot at once (one per jest worker): give each two minutes before calling it stuck.
export TEST_STACK_READY_TIMEOUT_MS="${TEST_STACK_READY_TIMEOUT_MS:-120000}"
export OTEL_TRACES_EXPORTER=none OTEL_METRICS_EXPORTER=none OTEL_LOGS_EXPORTER=none
# One master key for every service a test starts: any instance joining a queue group can decrypt.
export TEST_MASTER_KEYS="1:$(node -e "process.stdout.write(require('crypto').randomBytes(32).toString('base64'))")"

cd "$ROOT"
log "checking docker-compose.yml against the apps and their Dockerfiles"
node infra/validate-compose.mjs >/dev/null || die "infra/validate-compose.mjs failed (run it for details)"
node scripts/lib/nats-config.mjs --check || die "infra/nats/nats.conf or the Helm chart's copy is out of date (pnpm nats:config)"

log "running every test while ESLint (type-aware), the format check (Prettier) and the type check run"
# The end-to-end files are the run's critical path, and they leave a core idle for a good part of it
# (stacks booting, runs waiting on leases and timeouts). Everything else runs beside them at a lower
# priority, taking that idle time rather than theirs: the three checks (ESLint on its own, then the format
# check and the type check), whose verdicts are read after the tests, and the other packages' tests.
SIDE_NICE=5
nice -n "$SIDE_NICE" pnpm lint >"$TEST_DIR/lint.log" 2>&1 &
LINT_PID=$!
PIDS+=("$LINT_PID")
# Each package's build (composite, tsconfig.build.json) has type-checked its src; the type check
# (tsconfig.typecheck.json, one program) checks the tests and whatever the builds leave out against the
# builds' .d.ts files, which setup_all made.
(
  nice -n "$SIDE_NICE" pnpm format:check >"$TEST_DIR/format.log" 2>&1 || echo format >>"$TEST_DIR/checks-failed"
  nice -n "$SIDE_NICE" pnpm typecheck >"$TEST_DIR/typecheck.log" 2>&1 || echo typecheck >>"$TEST_DIR/checks-failed"
) &
CHECKS_PID=$!
PIDS+=("$CHECKS_PID")

# Every failing test is listed once more at the end (turbo interleaves long logs) and kept for later reading.
export SWITCHBOARD_TEST_FAILURES="$TEST_DIR/failures.txt"
: >"$SWITCHBOARD_TEST_FAILURES"
# Every jest worker has a NATS server and a database of its own (a lane, packages/testing/src/lanes.ts),
# made from this configuration and this migrated database; nothing connects to the template itself.
export TEST_NATS_CONF="$TEST_DIR/nats.conf"
# setup_all built every package: `--only` keeps the test runs from restoring build outputs (rewriting
# dist/ under a service another run is starting).
status=0
if [ $# -gt 0 ]; then
  pnpm turbo run test --only --concurrency=1 --continue "$@" || status=$?
else
  # The end-to-end files (the longest part, two jest workers) run beside every other package's tests.
  pnpm turbo run test --only --continue --filter=@switchboard/e2e &
  E2E_PID=$!
  PIDS+=("$E2E_PID")
  nice -n "$SIDE_NICE" pnpm turbo run test --only --concurrency=1 --continue --filter='!@switchboard/e2e' ||
    status=$?
  wait "$E2E_PID" || status=$?
fi
wait "$CHECKS_PID" || true
if grep -qx format "$TEST_DIR/checks-failed" 2>/dev/null; then
  grep -v '^Checking formatting' "$TEST_DIR/format.log" >&2 || true
  log "files not formatted as Prettier would (pnpm format:check lists them; pnpm format rewrites)"
  status=1
fi
if grep -qx typecheck "$TEST_DIR/checks-failed" 2>/dev/null; then
  cat "$TEST_DIR/typecheck.log" >&2
  log "type check failed (pnpm typecheck)"
  status=1
fi
if ! wait "$LINT_PID"; then
  cat "$TEST_DIR/lint.log" >&2
  log "lint failed (pnpm lint)"
  status=1
fi
if [ -s "$SWITCHBOARD_TEST_FAILURES" ]; then
  mkdir -p "$HOME/.cache/switchboard"
  cp "$SWITCHBOARD_TEST_FAILURES" "$HOME/.cache/switchboard/last-test-failures.txt"
  printf '\n%s\n' "failing tests (also in ~/.cache/switchboard/last-test-failures.txt):"
  cat "$SWITCHBOARD_TEST_FAILURES"
fi
exit "$status"
