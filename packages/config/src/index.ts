import { z } from 'zod';

/**
 * Parses `env` against a zod object schema once, at boot. Every problem is listed in one error so an
 * operator fixes a bad deployment in one pass instead of one variable per restart.
 */
export function parseEnv<S extends z.ZodObject>(schema: S, env: NodeJS.ProcessEnv = process.env): z.infer<S> {
  // Empty strings mean "unset" for optional variables, which is what shells and compose files produce.
  const cleaned: Record<string, string> = {};
  for (const [key, value] of Object.entries(env))
    if (value !== undefined && value !== '') cleaned[key] = value;
  const result = schema.safeParse(cleaned);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  - ${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new Error(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return result.data;
}

const port = (fallback: number) => z.coerce.number().int().min(1).max(65535).default(fallback);
const booleanish = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no'])
    .default(fallback ? 'true' : 'false')
    .transform((v) => v === 'true' || v === '1' || v === 'yes');

/** Fragments composed by each app's own `src/config/env.ts`. */
export const envFragments = {
  port,
  booleanish,
  nats: {
    NATS_URL: z.string().default('nats://127.0.0.1:4222'),
    /**
     * This process's own NATS user and password (one user per service, with the subject permissions of
     * infra/nats/nats.conf). Both or neither; without them the server must allow anonymous clients.
     */
    NATS_USER: z.string().min(1).optional(),
    // The NATS server substitutes passwords into its configuration as bare values: a leading digit reads as
    // a number (`5mb0…` fails to parse, `12345` is no string) and punctuation ends the value.
    NATS_PASSWORD: z
      .string()
      .regex(
        /^[A-Za-z][A-Za-z0-9_-]{15,}$/,
        'must be 16+ letters, digits, "-" or "_", starting with a letter (e.g. pw$(openssl rand -hex 24))',
      )
      .optional(),
  },
  /**
   * How deeply JSON from outside (API bodies, provider webhooks) may nest; deeper is refused before it is
   * parsed. At most 100, so the envelopes services wrap around a body stay under the NATS payload limit
   * (`MESSAGE_JSON_MAX_DEPTH` in contracts, 128).
   */
  jsonDepth: {
    SWITCHBOARD_JSON_MAX_DEPTH: z.coerce.number().int().min(8).max(100).default(64),
  },
  database: {
    DATABASE_URL: z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'must be a postgresql:// URL')
      .default('postgresql://postgres@127.0.0.1:5432/switchboard'),
  },
  redis: {
    REDIS_URL: z
      .string()
      .regex(/^rediss?:\/\//, 'must be a redis:// URL')
      .default('redis://127.0.0.1:6379'),
  },
  logging: {
    LOG_LEVEL: z.enum(['error', 'warn', 'log', 'debug', 'verbose']).default('log'),
    LOG_FORMAT: z.enum(['pretty', 'json']).default('pretty'),
  },
  publicUrls: {
    SWITCHBOARD_SERVER_URL: z.url().default('http://localhost:3003'),
    SWITCHBOARD_CONNECT_URL: z.url().default('http://localhost:3009'),
    /**
     * Origins of the customer's app that may embed the connect page (CSP `frame-ancestors`) and receive the
     * connect page's and the OAuth result page's messages (`postMessage` targets), comma separated. Empty
     * (the default): no other site may frame the page and no message leaves for another origin; the connect
     * link still works as a page or a popup of its own.
     */
    SWITCHBOARD_CONNECT_ALLOWED_ORIGINS: z
      .string()
      .default('')
      .transform((value, ctx) => {
        const origins: string[] = [];
        for (const item of value
          .split(',')
          .map((v) => v.trim())
          .filter(Boolean)) {
          let origin: string | undefined;
          try {
            const url = new URL(item);
            if (
              (url.protocol === 'https:' || url.protocol === 'http:') &&
              url.origin === item.replace(/\/$/, '')
            )
              origin = url.origin;
          } catch {
            origin = undefined;
          }
          if (!origin)
            ctx.addIssue({ code: 'custom', message: `"${item}" is not an origin (scheme://host[:port])` });
          else origins.push(origin);
        }
        return origins;
      }),
  },
  /**
   * The disk budget of each JetStream stream a service creates (give every service the same values): at
   * the budget the oldest messages are dropped (`old`) or new ones refused (`new`).
   */
  streams: {
    SWITCHBOARD_STREAM_MAX_BYTES: z.coerce
      .number()
      .int()
      .min(1024 * 1024)
      .default(1024 ** 3),
    SWITCHBOARD_STREAM_DISCARD: z.enum(['old', 'new']).default('old'),
    /**
     * Copies JetStream keeps of each stream (`num_replicas`): 1 on a single NATS server, 3 on a NATS
     * cluster so that an event survives the loss of a server. A single server refuses more than 1.
     */
    SWITCHBOARD_STREAM_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
  },
  /**
   * The longest on-event scripts that someone waits for (validate-connection while an end user connects or
   * a connection is imported, pre-connection-deletion while the vault deletes) may run, all scripts of one
   * event together. The orchestrator bounds the runs with it; auth-connect and the vault (import) wait for
   * the verdict that long (plus a margin).
   */
  onEvent: {
    SWITCHBOARD_ON_EVENT_TIMEOUT_MS: z.coerce.number().int().min(500).max(60_000).default(5_000),
  },
  /** Versioned master keys: `1:<base64 32 bytes>,2:<base64 32 bytes>`; the highest version encrypts. */
  masterKeys: {
    SWITCHBOARD_MASTER_KEYS: z
      .string()
      .regex(
        /^\d+:[A-Za-z0-9+/=_-]{43,44}(,\d+:[A-Za-z0-9+/=_-]{43,44})*$/,
        'must be "<version>:<base64 of 32 bytes>" entries separated by commas',
      ),
  },
} as const;

/**
 * What a master-key rewrap command prints (one JSON line) and its function answers: the vault's
 * credentials, auth-connect's secrets, the orchestrator's records, the relay's signing keys. `Id` names a
 * value that failed.
 */
export interface RewrapReport<Id = string> {
  /** The master key version every value is wrapped with once the run is done. */
  currentVersion: number;
  /** Values found on an older version. */
  scanned: number;
  /** Values the run rewrapped. */
  rewrapped: number;
  /** Values written by someone else while the run worked on them: they already hold newer data. */
  changedConcurrently: number;
  /** Values that cannot be opened with any configured key (a missing old version, or tampered data). */
  failed: Id[];
  /** Values still on an older version after the run. */
  remaining: number;
}

/** A rewrap run's options (from `rewrapCliArgs`), and its progress after each batch. */
export interface RewrapOptions<Id = string> {
  batchSize?: number;
  /** Only this environment's values (to rotate a large installation piece by piece). */
  environmentId?: number;
  onProgress?: (report: RewrapReport<Id>) => void;
}

/** An empty report of a run towards `currentVersion`. */
export function newRewrapReport<Id>(currentVersion: number): RewrapReport<Id> {
  return { currentVersion, scanned: 0, rewrapped: 0, changedConcurrently: 0, failed: [], remaining: 0 };
}

/** One sealed column a service keeps: how to page through it by id and a compare-and-set write. */
export interface SealedColumn {
  /** Names a value that cannot be rewrapped in the report: `<kind>:<id>`. */
  kind: string;
  /** The rows after `afterId` in id order, at most `take`, with each value's associated data. */
  page(afterId: number, take: number): Promise<{ id: number; sealed: string | null; aad: string }[]>;
  /** Replaces `from` by `to` only if the row still holds `from`; true when it did. */
  swap(id: number, from: string, to: string): Promise<boolean>;
}

/** What the rewrap needs of an `EnvelopeCipher` (@switchboard/crypto). */
export interface SealedValueRewrapper {
  versionOf(sealed: string): number;
  rewrap(sealed: string, aad: string): string;
}

/**
 * Rewraps every value of `columns` not on `currentVersion` under it, in id order and in batches: each value is
 * replaced only if its row still holds what was read, so a value written meanwhile (already with the new
 * keyring) is never overwritten; only the wrapped data key changes. A value no configured key opens is
 * reported in `failed`. `remaining` is counted once every column is done, so it also sees a value moved
 * between columns, or written by a replica still on the old keyring, during the run. Safe to run again.
 */
export async function rewrapSealedColumns(
  columns: readonly SealedColumn[],
  cipher: SealedValueRewrapper,
  currentVersion: number,
  options: Omit<RewrapOptions, 'environmentId'> = {},
): Promise<RewrapReport<string>> {
  const batchSize = options.batchSize ?? 500;
  const report = newRewrapReport<string>(currentVersion);
  const versionOf = (sealed: string): number | undefined => {
    try {
      return cipher.versionOf(sealed);
    } catch {
      // Not one of our envelopes.
      return undefined;
    }
  };
  for (const column of columns) {
    for await (const batch of batchesOf(column, batchSize)) {
      for (const row of batch) {
        if (row.sealed === null || versionOf(row.sealed) === currentVersion) continue;
        report.scanned++;
        let next: string;
        try {
          next = cipher.rewrap(row.sealed, row.aad);
        } catch {
          report.failed.push(`${column.kind}:${row.id}`);
          continue;
        }
        if (await column.swap(row.id, row.sealed, next)) report.rewrapped++;
        else report.changedConcurrently++;
      }
      options.onProgress?.(report);
    }
  }
  for (const column of columns) {
    for await (const batch of batchesOf(column, batchSize)) {
      for (const row of batch)
        if (row.sealed !== null && versionOf(row.sealed) !== currentVersion) report.remaining++;
    }
  }
  return report;
}

/** Every row of a column, in id order, `batchSize` at a time. */
async function* batchesOf(column: SealedColumn, batchSize: number) {
  for (let afterId = 0; ; ) {
    const rows = await column.page(afterId, batchSize);
    if (rows.length === 0) return;
    afterId = rows[rows.length - 1]!.id;
    yield rows;
  }
}

/**
 * The flags of the master-key rewrap commands (the vault's and the orchestrator's `rotate-cli`, auth-connect's
 * and the relay's `rewrap-cli`): `--batch-size=<1..10000>` (default 500) and `--environment-id=<id>`.
 * Throws on anything else.
 */
export function rewrapCliArgs(argv: readonly string[]): { batchSize: number; environmentId?: number } {
  const flag = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
  const unknown = argv.filter((a) => !/^--(batch-size|environment-id)=/.test(a));
  if (unknown.length > 0) throw new Error(`unknown argument(s): ${unknown.join(' ')}`);
  const batchSize = Number(flag('batch-size') ?? 500);
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000)
    throw new Error('--batch-size must be 1..10000');
  const raw = flag('environment-id');
  if (raw === undefined) return { batchSize };
  const environmentId = Number(raw);
  if (!Number.isInteger(environmentId)) throw new Error('--environment-id must be a number');
  return { batchSize, environmentId };
}

/**
 * The body of every master-key rewrap command: reads `DATABASE_URL` and `SWITCHBOARD_MASTER_KEYS` (the new
 * version the highest) and the flags (`rewrapCliArgs`), opens the service's database client, runs `rewrap`,
 * prints its report as one JSON line and exits 1 when a value failed or one is still on an old version, so a
 * zero exit means the old version may be dropped.
 */
export function runRewrapCommand<C, Id>(command: {
  open: (databaseUrl: string) => C;
  close: (client: C) => Promise<void>;
  rewrap: (
    client: C,
    masterKeys: string,
    options: { batchSize: number; environmentId?: number },
  ) => Promise<RewrapReport<Id>>;
}): void {
  runCommand(async () => {
    const env = parseEnv(z.object({ ...envFragments.database, ...envFragments.masterKeys }));
    const options = rewrapCliArgs(process.argv.slice(2));
    const client = command.open(env.DATABASE_URL);
    try {
      const report = await command.rewrap(client, env.SWITCHBOARD_MASTER_KEYS, options);
      process.stdout.write(`${JSON.stringify(report)}\n`);
      return report.failed.length > 0 || report.remaining > 0 ? 1 : 0;
    } finally {
      await command.close(client);
    }
  });
}

/**
 * Runs a one-shot command (the rewrap CLIs): exits with the code `main` resolves with, or prints the
 * error's message (never its stack, which may quote configuration) and exits 1.
 */
export function runCommand(main: () => Promise<number>): void {
  main().then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(error instanceof Error ? error.message : error);
      process.exit(1);
    },
  );
}
