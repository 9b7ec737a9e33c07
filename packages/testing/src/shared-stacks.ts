import {
  bootStack,
  closeSeedClients,
  seedTestAccount,
  SHARED_STACKS_KEY,
  type RunningService,
  type SharedStacks,
  type Stack,
  type StackOptions,
  type StackService,
} from './stack';

/**
 * The stacks one jest worker shares among its test files. Booting the seven services is most of an e2e
 * file's time, and most files need nothing of the stack but its API: they ask with `shared: true` and get
 * the worker's stack for their options (one per distinct set of options), with an account of their own.
 *
 * It lives outside the test files' module registry (jest gives every file a fresh one): the e2e test
 * environment (`jest-environment.ts`) creates it once per worker process and hands it to each file's
 * global; the processes are stopped by the global teardown, or killed when the worker exits.
 */
export function sharedStacks(): SharedStacks {
  const holder = globalThis as Record<symbol, SharedStacks | undefined>;
  holder[SHARED_STACKS_KEY] ??= createSharedStacks();
  return holder[SHARED_STACKS_KEY];
}

/**
 * Stops the worker's shared stacks, if any were started, and closes the seed's database clients (a jest
 * global teardown).
 */
export async function stopSharedStacks(): Promise<void> {
  await (globalThis as Record<symbol, SharedStacks | undefined>)[SHARED_STACKS_KEY]?.stopAll();
  await closeSeedClients();
}

function createSharedStacks(): SharedStacks {
  const stacks = new Map<string, { stack: Promise<Stack>; used: boolean }>();
  const started = new Set<Stack>();
  let exitHook = false;

  const alive = (stack: Stack) =>
    [...Object.values(stack.replicas).flat(), ...stack.workers].every(
      (r) => r.process.exitCode === null && r.process.signalCode === null,
    );

  return {
    async acquire(options) {
      const key = keyOf(options);
      let entry = stacks.get(key);
      if (entry) {
        const existing = await entry.stack.catch(() => undefined);
        if (!existing || !alive(existing) || !(await ready(existing))) {
          if (existing) started.delete(existing);
          await existing?.stop();
          stacks.delete(key);
          entry = undefined;
        }
      }
      if (!entry) {
        const starting = bootStack(options);
        entry = { stack: starting, used: false };
        stacks.set(key, entry);
        void starting.then((s) => started.add(s)).catch(() => undefined);
        if (!exitHook) {
          exitHook = true;
          // A worker that ends without the global teardown (several workers) must not leave services behind.
          // jest ends a worker by letting it exit on its own, and SIGTERMs it when it does not (the services'
          // pipes keep it alive): Node then dies without an 'exit' event, so SIGTERM is handled here too.
          const killAll = () => {
            for (const s of started)
              for (const r of [...Object.values(s.replicas).flat(), ...s.workers])
                if (r.process.exitCode === null && r.process.signalCode === null) r.process.kill('SIGKILL');
          };
          process.once('exit', killAll);
          process.once('SIGTERM', () => {
            killAll();
            process.exit(143);
          });
        }
      }
      const stack = await entry.stack.catch((error: unknown) => {
        stacks.delete(key);
        throw error;
      });
      // The first file uses the account the stack was seeded with; every later one gets a fresh one.
      const account = entry.used ? await seedTestAccount(stack.databaseUrl) : stack;
      entry.used = true;
      return view(stack, account);
    },
    async stopAll() {
      const all = [...stacks.values()];
      stacks.clear();
      started.clear();
      await Promise.all(all.map((e) => e.stack.then((s) => s.stop()).catch(() => undefined)));
    },
  };
}

/**
 * What one test file sees of a shared stack: its own account, logs from now on, and no control over the
 * shared processes. It may add gateways (`startReplica('gateway', env)`): a gateway serves only the
 * clients that call it (it takes no work from a NATS queue group), so one with other settings changes
 * nothing for the other files; they are stopped when the file releases the stack.
 */
function view(
  stack: Stack,
  account: { secretKey: string; accountName: string; environmentUuid: string },
): Stack {
  const from = new Map<RunningService, number>();
  for (const r of [...Object.values(stack.replicas).flat(), ...stack.workers]) from.set(r, r.output.length);
  const since = (r: RunningService) => r.output.slice(from.get(r) ?? 0).join('');
  const refuse = (what: string) => () => {
    throw new Error(
      `${what} would change a stack other test files share: start one of this file's own (startStack without shared)`,
    );
  };
  const added: RunningService[] = [];
  return {
    ...stack,
    secretKey: account.secretKey,
    accountName: account.accountName,
    environmentUuid: account.environmentUuid,
    logs: (service: StackService) =>
      [...stack.replicas[service], ...(service === 'sync-orchestrator' ? stack.workers : [])]
        .map(since)
        .join(''),
    stopService: refuse('stopService'),
    startReplica: async (service, env) => {
      if (service !== 'gateway') return refuse(`startReplica('${service}')`)();
      const replica = await stack.startReplica(service, env);
      added.push(replica);
      return replica;
    },
    startWorker: refuse('startWorker'),
    // The stack outlives the file (the global teardown, or the worker's exit, stops it); what the file
    // added goes now.
    stop: async () => {
      await Promise.all(added.map((r) => stopProcess(r)));
      for (const r of added) stack.replicas[r.name].splice(stack.replicas[r.name].indexOf(r), 1);
      added.length = 0;
    },
  };
}

function stopProcess(r: RunningService): Promise<void> {
  return new Promise((resolve) => {
    if (r.process.exitCode !== null || r.process.signalCode !== null) return resolve();
    r.process.once('exit', () => resolve());
    r.process.kill('SIGTERM');
  });
}

async function ready(stack: Stack): Promise<boolean> {
  try {
    return (await fetch(`${stack.gatewayUrl}/ready`)).status === 200;
  } catch {
    return false;
  }
}

/** Options that start the same stack give the same key (object keys in any order). */
function keyOf(options: StackOptions): string {
  const { readyTimeoutMs: _, shared: __, ...rest } = options;
  return JSON.stringify(sorted(rest));
}

function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted);
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, sorted((value as Record<string, unknown>)[k])]),
    );
  return value;
}
