# syntax=docker/dockerfile:1.20
#
# Switchboard gateway: one image for this service only.
# Build from the repository root, which is the build context:
#
#   docker build -f infra/docker/gateway.Dockerfile -t switchboard/gateway .
#
# The stages `base`, `deps` and `build` are the same text in every infra/docker/<app>.Dockerfile
# (only the default of ARG APP differs, and it is declared after the dependency install), so
# BuildKit installs the workspace once and shares that layer between the seven app images.
# Keep them identical: `node infra/validate-compose.mjs` fails when they drift apart.
# The build context is filtered by infra/docker/gateway.Dockerfile.dockerignore.

ARG NODE_IMAGE=node:24-bookworm-slim

# ---- base: Node 24 and pnpm ------------------------------------------------------------------
FROM ${NODE_IMAGE} AS base
ARG PNPM_VERSION=10.34.9
# pnpm comes from the npm registry; corepack's signature check is not reliable for pnpm 10.
RUN npm install --global pnpm@${PNPM_VERSION} && npm cache clean --force
ENV CI=true \
    npm_config_update_notifier=false \
    npm_config_store_dir=/pnpm/store \
    TURBO_TELEMETRY_DISABLED=1 \
    CHECKPOINT_DISABLE=1
WORKDIR /app

# ---- deps: the whole workspace's dependencies, from the manifests and the lockfile only --------
FROM base AS deps
# node-gyp toolchain: isolated-vm (functions-runtime) is built from source when its prebuilt binary does not load.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
# node-gyp builds against the headers named by npm_config_nodedir (it must not download them); in
# the official Node image they are under /usr/local. pnpm passes the variable to the node-gyp it runs.
# Prisma: `prisma generate` (packages/db build) must not try to download the native schema
# engine; the shim runs the Wasm engine from npm instead.
ENV npm_config_nodedir=/usr/local \
    PRISMA_SCHEMA_ENGINE_BINARY=/app/packages/db/tools/schema-engine-wasm-shim.mjs
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml .npmrc ./
COPY --parents apps/*/package.json packages/*/package.json e2e/package.json ./
# The store is a cache mount: package tarballs and the built isolated-vm (pnpm's side-effects
# cache) survive between builds, so a source change does not rebuild native code.
RUN --mount=type=cache,id=switchboard-pnpm-store,target=/pnpm/store \
    pnpm install --frozen-lockfile

# ---- build: compile the app and its workspace packages, then cut a production-only tree --------
FROM deps AS build
COPY . .
ARG APP=gateway
RUN pnpm turbo run build --filter=@switchboard/${APP}...
# pnpm 10 deploys from a non-injected workspace only with --legacy (the alternative,
# inject-workspace-packages=true, would change how every workspace package is linked in dev).
# /out holds the app's package.json, its dist/, and a node_modules with production
# dependencies only; workspace packages are copied in (with their dist/).
RUN --mount=type=cache,id=switchboard-pnpm-store,target=/pnpm/store \
    pnpm deploy --legacy --filter=@switchboard/${APP} --prod /out

# ---- runtime ---------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    PORT=3003
WORKDIR /app
# Files stay owned by root: the service only reads them.
COPY --from=build /out ./
USER node
EXPOSE 3003
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || '3003') + '/health', { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# A young generation of at most 4 MB per semi-space (V8 gives 64 MB on a large host): a streamed download
# is collected as it passes instead of growing the heap by tens of MB (infra/README.md).
CMD ["node", "--max-semi-space-size=4", "dist/main.js"]
