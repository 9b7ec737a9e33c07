#!/usr/bin/env node
// Stand-in for Prisma's native `schema-engine` binary (which `prisma` downloads from a non-npm
// host). Point PRISMA_SCHEMA_ENGINE_BINARY at this file (chmod +x). It speaks the same stdio
// JSON-RPC as the binary, but runs @prisma/schema-engine-wasm (from npm) over @prisma/adapter-pg.
// PostgreSQL only.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import readline from 'node:readline';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { bindMigrationAwareSqlAdapterFactory } from '@prisma/driver-adapter-utils';
import * as bg from '@prisma/schema-engine-wasm/schema_engine_bg';

const require = createRequire(import.meta.url);

// --- args -------------------------------------------------------------------------------------
const argv = process.argv.slice(2);
const datamodelPaths = [];
let datasource = {};
let cliCommand = null;
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === '--version' || a === '-V') {
    console.log('schema-engine-cli wasm-shim');
    process.exit(0);
  } else if (a === '--datamodels') datamodelPaths.push(argv[++i]);
  else if (a === '--datasource') datasource = JSON.parse(argv[++i]);
  else if (a === '--enabled-preview-features' || a === '--extension-types') i++;
  else if (a === 'cli') cliCommand = argv[++i];
}
const url = datasource.url ?? process.env.DATABASE_URL;
if (!url) {
  console.error('schema-engine shim: no datasource url (set datasource.url in prisma.config.ts)');
  process.exit(1);
}

// --- pg quirks --------------------------------------------------------------------------------
// prisma/orm#27403: adapter-pg rejects catalog types ("char", name, reg*, pg_node_tree) that the
// schema engine reads while describing the database; hand them over as text / text[].
const TEXTISH = new Set([18, 19, 24, 194, 2202, 2203, 2204, 2205, 2206, 4089, 4096, 4191]);
const TEXTISH_ARRAYS = new Set([1002, 1003]);
const origRowDescription = pg.Query.prototype.handleRowDescription;
pg.Query.prototype.handleRowDescription = function (msg) {
  for (const f of msg.fields) {
    if (TEXTISH.has(f.dataTypeID)) f.dataTypeID = 25;
    else if (TEXTISH_ARRAYS.has(f.dataTypeID)) f.dataTypeID = 1009;
  }
  return origRowDescription.call(this, msg);
};

function pgConfig(connectionString) {
  const u = new URL(connectionString);
  const schema = u.searchParams.get('schema') ?? undefined;
  return {
    cfg: {
      host: u.hostname || undefined,
      port: Number(u.port || 5432),
      user: decodeURIComponent(u.username),
      password: decodeURIComponent(u.password),
      database: decodeURIComponent(u.pathname.slice(1)) || 'postgres',
      allowExitOnIdle: true,
      // Like the native engine: `?schema=` becomes the search_path, so unqualified objects
      // (notably `_prisma_migrations`) land in that schema rather than in `public`.
      ...(schema ? { options: `-c search_path="${schema.replace(/[\\\s]/g, (c) => `\\${c}`)}"` } : {}),
    },
    schema,
  };
}

// adapter-pg's executeScript() splits the script on every ";" (also inside comments, string
// literals and $$-quoted function bodies) and runs the pieces one by one, each in autocommit.
// The native engine sends the whole migration as ONE simple-protocol query (one implicit
// transaction). Do the same, so hand-written migrations (functions, triggers, ...) apply and a
// failing migration leaves nothing half-applied.
function wholeScript(adapter) {
  adapter.executeScript = async function (script) {
    try {
      await this.client.query(script);
    } catch (e) {
      this.onError(e);
    }
  };
  return adapter;
}

// adapter-pg's own connectToShadowDb() keeps the connectionString (so `database` is ignored) and
// drops the shadow DB while its pool is still open. Do it with discrete fields and DROP ... FORCE.
class PrismaPgMigrate extends PrismaPg {
  constructor(cfg, options, shadowUrl) {
    super(cfg, options);
    this.cfg = cfg;
    this.opts = options;
    this.shadowUrl = shadowUrl;
  }
  async connect() {
    return wholeScript(await super.connect());
  }
  async connectToShadowDb() {
    if (this.shadowUrl) {
      const { cfg, schema } = pgConfig(this.shadowUrl);
      return wholeScript(await new PrismaPg(cfg, schema ? { schema } : undefined).connect());
    }
    const admin = new pg.Client(this.cfg);
    await admin.connect();
    const db = `prisma_shadow_${randomUUID().replaceAll('-', '')}`;
    await admin.query(`CREATE DATABASE "${db}"`);
    const adapter = wholeScript(await new PrismaPg({ ...this.cfg, database: db }, this.opts).connect());
    const dispose = adapter.dispose.bind(adapter);
    adapter.dispose = async () => {
      await dispose();
      await admin.query(`DROP DATABASE IF EXISTS "${db}" WITH (FORCE)`);
      await admin.end();
    };
    return adapter;
  }
}

const { cfg, schema } = pgConfig(url);

// --- one-shot `schema-engine cli <command>` ---------------------------------------------------
function logError(code, message) {
  // the CLI skips the first stderr line, then reads JSON log lines
  process.stderr.write('schema-engine shim\n');
  process.stderr.write(
    JSON.stringify({
      level: 'ERROR',
      target: 'schema_engine::logger',
      fields: { error_code: code, message },
    }) + '\n',
  );
}
if (cliCommand) {
  try {
    if (cliCommand === 'can-connect-to-database') {
      const c = new pg.Client(cfg);
      await c.connect();
      await c.end();
    } else if (cliCommand === 'create-database') {
      const c = new pg.Client({ ...cfg, database: 'postgres' });
      await c.connect();
      await c.query(`CREATE DATABASE "${cfg.database.replaceAll('"', '""')}"`);
      await c.end();
      console.log(JSON.stringify({ database_name: cfg.database }));
    } else if (cliCommand === 'drop-database') {
      const c = new pg.Client({ ...cfg, database: 'postgres' });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${cfg.database.replaceAll('"', '""')}" WITH (FORCE)`);
      await c.end();
    } else {
      logError('P1000', `schema-engine shim: unsupported cli command ${cliCommand}`);
      process.exit(1);
    }
    process.exit(0);
  } catch (e) {
    const code = e.code === '3D000' ? 'P1003' : e.code === '28P01' ? 'P1000' : 'P1001';
    logError(code, e.message);
    process.exit(1);
  }
}

// --- JSON-RPC server over stdio ---------------------------------------------------------------
globalThis.PRISMA_WASM_PANIC_REGISTRY ??= {
  message: '',
  get() {
    return this.message;
  },
  set_message(m) {
    this.message = `RuntimeError: ${m}`;
  },
};
process.on('uncaughtException', (e) => {
  process.stderr.write(
    `schema-engine shim: ${globalThis.PRISMA_WASM_PANIC_REGISTRY.get()} ${e?.stack ?? e}\n`,
  );
  process.exit(101);
});
const wasmFile = join(
  dirname(require.resolve('@prisma/schema-engine-wasm/schema_engine_bg')),
  'schema_engine_bg.wasm',
);
const instance = new WebAssembly.Instance(new WebAssembly.Module(readFileSync(wasmFile)), {
  './schema_engine_bg.js': bg,
});
bg.__wbg_set_wasm(instance.exports);
instance.exports.__wbindgen_start?.();

const adapter = bindMigrationAwareSqlAdapterFactory(
  new PrismaPgMigrate(cfg, schema ? { schema } : undefined, datasource.shadowDatabaseUrl),
);
const engine = await bg.SchemaEngine.new(
  { datamodels: datamodelPaths.length ? datamodelPaths.map((p) => [p, readFileSync(p, 'utf8')]) : undefined },
  (log) => process.stderr.write(String(log).trimEnd() + '\n'),
  adapter,
);

const METHOD_ALIASES = { getDatabaseVersion: 'version' };
const NEEDS_MIGRATIONS_SCHEMA = new Set(['evaluateDataLoss', 'createMigration']);
const send = (msg) => process.stdout.write(JSON.stringify(msg) + '\n');
const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
let queue = Promise.resolve();
rl.on('line', (line) => {
  if (!line.trim()) return;
  const req = JSON.parse(line);
  if (req.id === undefined || !req.method) return; // e.g. the CLI's reply to our `print` request
  queue = queue.then(async () => {
    const method = METHOD_ALIASES[req.method] ?? req.method;
    try {
      if (typeof engine[method] !== 'function')
        throw new Error(`method ${req.method} is not supported by the Wasm schema engine`);
      const params = req.params ?? {};
      let result;
      try {
        result = await engine[method](params);
      } catch (e) {
        // The Wasm engine gives evaluateDataLoss/createMigration no shadow-DB factory; they rely on
        // a schema cache that devDiagnostic fills. When `migrate dev` has just applied pending
        // migrations, the key misses and they fail with "PostgreSQL shadow DB must be provided
        // through an external factory". Fill the cache for the full migration list and retry once.
        if (
          !NEEDS_MIGRATIONS_SCHEMA.has(method) ||
          !params.migrationsList ||
          !/must be provided through an external factory/.test(String(e?.message ?? e))
        )
          throw e;
        await engine.devDiagnostic({
          migrationsList: params.migrationsList,
          filters: params.filters ?? { externalTables: [], externalEnums: [] },
        });
        result = await engine[method](params);
      }
      // The binary prints `migrate diff` output through a `print` request to the CLI; the Wasm
      // engine returns it as `stdout` instead.
      if (method === 'diff' && result?.stdout) {
        send({
          jsonrpc: '2.0',
          id: 1_000_000 + req.id,
          method: 'print',
          params: { content: result.stdout.replace(/\n$/, '') },
        });
        result.stdout = null;
      }
      send({ jsonrpc: '2.0', id: req.id, result: result === undefined ? null : result });
    } catch (e) {
      const isPanic = e?.name === 'RuntimeError';
      const message = isPanic ? globalThis.PRISMA_WASM_PANIC_REGISTRY.get() : (e?.message ?? String(e));
      send({
        jsonrpc: '2.0',
        id: req.id,
        error: {
          code: 4466,
          message: 'An error happened. Check the data field for details.',
          data: { is_panic: isPanic, message, error_code: e?.code, meta: e?.meta, error: { message } },
        },
      });
    }
  });
});
rl.on('close', () => queue.finally(() => process.exit(0)));
