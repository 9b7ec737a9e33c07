# syntax=docker/dockerfile:1.20
#
# Switchboard migrate: a one-shot job that applies the Prisma migrations of packages/db to
# DATABASE_URL and exits. Services never migrate at boot (shared/ARCHITECTURE.md, "Data").
# Build from the repository root, which is the build context:
#
#   docker build -f infra/docker/migrate.Dockerfile -t switchboard/migrate .
#   docker run --rm -e DATABASE_URL=postgresql://... switchboard/migrate
#
# The `base` stage is the same text as in infra/docker/<app>.Dockerfile, so it is built once.
# The build context is filtered by infra/docker/migrate.Dockerfile.dockerignore.

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

# ---- migrate: packages/db with its dependencies (the prisma CLI is a devDependency) ------------
FROM base AS migrate
# The repository's .npmrc sets nodedir=/usr (Debian dev machines); the official Node image keeps
# its headers under /usr/local. Nothing native is built for packages/db, but keep them consistent.
# The native Prisma schema engine cannot be downloaded; the shim runs the Wasm engine from npm.
ENV npm_config_nodedir=/usr/local \
    PRISMA_SCHEMA_ENGINE_BINARY=/app/packages/db/tools/schema-engine-wasm-shim.mjs
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml .npmrc ./
COPY --parents apps/*/package.json packages/*/package.json e2e/package.json ./
# Only packages/db's dependency graph: no isolated-vm build, no compiler in this image.
RUN --mount=type=cache,id=switchboard-pnpm-store,target=/pnpm/store \
    pnpm install --frozen-lockfile --filter=@switchboard/db
COPY packages/db/ packages/db/
# The shim must be executable (PRISMA_SCHEMA_ENGINE_BINARY is spawned directly); this also
# fails the build early when the shim is missing.
RUN chmod 0755 packages/db/tools/schema-engine-wasm-shim.mjs
USER node
CMD ["pnpm", "--filter", "@switchboard/db", "run", "migrate:deploy"]
