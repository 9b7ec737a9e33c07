/**
 * `pnpm --filter bench run idle`: starts the whole stack, waits for it to settle, and prints how much CPU
 * each service uses while nothing happens (an installation mostly idles; background polling there is
 * paid around the clock and takes from every benchmark on a small machine).
 * Flags: --settle-seconds=10 --seconds=20
 */
import { startStack } from '@switchboard/testing';
import { cpuMicros } from '../tools/proc';

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const SETTLE = Number(args.get('settle-seconds') ?? 10);
const SECONDS = Number(args.get('seconds') ?? 20);

async function main(): Promise<void> {
  const stack = await startStack({ env: { LOG_LEVEL: 'warn' } });
  try {
    await new Promise((r) => setTimeout(r, SETTLE * 1000));
    const services = Object.entries(stack.services).map(([name, s]) => ({ name, pid: s.process.pid! }));
    const before = services.map((s) => cpuMicros(s.pid));
    await new Promise((r) => setTimeout(r, SECONDS * 1000));
    const lines = services.map(
      (s, i) =>
        `${s.name.padEnd(18)} ${((100 * (cpuMicros(s.pid) - before[i]!)) / (SECONDS * 1_000_000)).toFixed(1)} % of a core`,
    );
    process.stdout.write(`idle CPU over ${SECONDS} s (after ${SETTLE} s to settle):\n${lines.join('\n')}\n`);
  } finally {
    await stack.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
