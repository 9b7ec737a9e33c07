// `node ../../scripts/lib/bundle-service.mjs dist/service.js=dist/main.js ...`, run by a service's build
// after tsc: bundles the compiled entry and the JavaScript it requires into one file. A service then
// starts by reading one file instead of resolving and loading its modules one by one from node_modules:
// less CPU per start (bench/README.md, "Why the current settings"), which every pod start and every test
// stack pays. tsc's own output stays beside it (`dist/service.js` and the rest) for reading.
//
// It bundles tsc's output, not the TypeScript: Nest's dependency injection reads the constructor
// parameter types that tsc emits as decorator metadata, which esbuild does not emit.
import { build } from 'esbuild';

// Left to node's resolution at run time, from the service's own node_modules:
const EXTERNAL = [
  // native addons, and packages that find files of their own next to their code (`__dirname`, wasm, the
  // Prisma client's engine files, the provider catalog, the console's build, swagger-ui's assets)
  '*.node',
  'isolated-vm',
  '@prisma/*',
  '@switchboard/db',
  '@switchboard/crypto',
  '@switchboard/providers',
  '@switchboard/console',
  'swagger-ui-dist',
  // the Temporal SDK: a native core, and the worker bundles the workflows with webpack from their sources
  '@temporalio/*',
  // patched at require time by OpenTelemetry's instrumentation (`http` is a built-in, never bundled)
  'pg',
  'pg-native',
];

// Optional peers of Nest and its adapters, required only by features none of the services uses (class
// validation, the Express platform, views, websockets, the other transports). Left as plain requires, they
// fail at run time exactly where they would have without the bundle. A new one makes the build fail with
// esbuild's "Could not resolve" and its name, to be added here.
const OPTIONAL_PEERS = [
  'class-validator',
  'class-transformer',
  '@nestjs/platform-express',
  '@nestjs/websockets',
  '@nestjs/websockets/*',
  '@nestjs/swagger',
  '@fastify/view',
  'kafkajs',
  'mqtt',
  'amqplib',
  'amqp-connection-manager',
];

const entries = process.argv.slice(2).map((pair) => {
  const [from, to] = pair.split('=');
  if (!from || !to) throw new Error(`expected <compiled entry>=<bundle>, got "${pair}"`);
  return { from, to };
});

for (const { from, to } of entries) {
  await build({
    entryPoints: [from],
    outfile: to,
    bundle: true,
    platform: 'node',
    target: 'node24',
    format: 'cjs',
    external: [...EXTERNAL, ...OPTIONAL_PEERS],
    // Not minified: names stay as written (Nest's log contexts are class names; tsc's CommonJS modules are
    // each wrapped whole, so nothing of ours is renamed).
    sourcemap: 'linked',
    logLevel: 'warning',
    logOverride: { 'require-resolve-not-external': 'silent' },
  });
}
