import 'dotenv/config';
import path from 'node:path';
import { defineConfig } from 'prisma/config';

// The native schema engine is downloaded from a host our machines cannot reach; this shim runs Prisma's
// Wasm schema engine (from npm) behind the same stdio protocol. See tools/schema-engine-wasm-shim.mjs.
process.env.PRISMA_SCHEMA_ENGINE_BINARY ??= path.resolve(process.cwd(), 'tools/schema-engine-wasm-shim.mjs');

export default defineConfig({
  schema: 'prisma/schema',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/switchboard' },
});
