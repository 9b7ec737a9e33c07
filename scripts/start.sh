#!/usr/bin/env bash
# `npm start`: set up what is missing, migrate, seed, then run every service in the foreground.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
setup_all

mkdir -p "$DATA_DIR/temporal"
# Secrets generated once and kept in a git-ignored file, so a second start reuses the same key.
SECRETS="$DATA_DIR/dev.env"
if [ ! -f "$SECRETS" ]; then
  log "generating development secrets in .data/dev.env"
  umask 077
  {
    echo "SWITCHBOARD_MASTER_KEYS=1:$(node -e "process.stdout.write(require('crypto').randomBytes(32).toString('base64'))")"
    echo "GENERATED_SECRET_KEY=$(node -e "process.stdout.write(require('crypto').randomUUID())")"
  } >"$SECRETS"
fi
# One NATS password per user of infra/nats/nats.conf, added once (also to a .data/dev.env from before).
(umask 077 && node "$ROOT/scripts/lib/nats-config.mjs" --passwords --existing "$SECRETS" >>"$SECRETS")
# shellcheck disable=SC1090
source "$SECRETS"
# The NATS server reads them; run-services.mjs gives each service its own and no other.
# shellcheck disable=SC2046
export $(grep -o '^NATS_PASSWORD_[A-Z_]*' "$SECRETS")
export SWITCHBOARD_MASTER_KEYS="${SWITCHBOARD_MASTER_KEYS_OVERRIDE:-$SWITCHBOARD_MASTER_KEYS}"
export SWITCHBOARD_SECRET_KEY="${SWITCHBOARD_SECRET_KEY:-$GENERATED_SECRET_KEY}"
export DATABASE_URL="${DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/switchboard}"
# The project's own NATS with per-service users, on 4223 so that it never meets a NATS without
# authentication on 4222. A NATS_URL of your own is used as is (configure it with infra/nats/nats.conf).
if [ -z "${NATS_URL:-}" ]; then
  ensure_nats "${SWITCHBOARD_NATS_PORT:-4223}"
  export NATS_URL="nats://127.0.0.1:${SWITCHBOARD_NATS_PORT:-4223}"
fi
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
export TEMPORAL_ADDRESS="${TEMPORAL_ADDRESS:-127.0.0.1:7233}"
export PORT="${PORT:-3003}"
export SWITCHBOARD_SERVER_URL="${SWITCHBOARD_SERVER_URL:-http://localhost:$PORT}"
export SWITCHBOARD_CONNECT_URL="${SWITCHBOARD_CONNECT_URL:-http://localhost:3009}"
export SWITCHBOARD_PROXY_URL="${SWITCHBOARD_PROXY_URL:-http://127.0.0.1:3012}"
# Traces go nowhere unless an OTLP endpoint (or another exporter) is configured.
if [ -z "${OTEL_EXPORTER_OTLP_ENDPOINT:-}${OTEL_EXPORTER_OTLP_TRACES_ENDPOINT:-}" ]; then
  export OTEL_TRACES_EXPORTER="${OTEL_TRACES_EXPORTER:-none}"
fi

port_open 127.0.0.1 "$PORT" && die "port $PORT is already in use (is Switchboard already running?)"

migrate "$DATABASE_URL"
log "seeding the development account"
SEEDED="$(node "$ROOT/apps/auth-connect/dist/seed-cli.js")" || die "seed failed"
# The seed never revives a revoked key (nor widens a narrowed one): say so rather than start with a dead key.
case "$SEEDED" in *'"revoked":true'*) log "warning: SWITCHBOARD_SECRET_KEY is revoked; set a new one to get a working key" ;; esac

export SWITCHBOARD_START_TEMPORAL=0 SWITCHBOARD_TEMPORAL_BIN="$TEMPORAL_BIN" SWITCHBOARD_ROOT="$ROOT"
if port_open "${TEMPORAL_ADDRESS%:*}" "${TEMPORAL_ADDRESS##*:}"; then
  log "reusing the Temporal server at $TEMPORAL_ADDRESS"
else
  export SWITCHBOARD_START_TEMPORAL=1
fi
exec node "$ROOT/scripts/lib/run-services.mjs"
