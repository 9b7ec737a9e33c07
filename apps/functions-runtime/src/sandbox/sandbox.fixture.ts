import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SandboxRequest } from './sandbox';
import { sandboxRequest } from './sandbox-request.fixture';

/**
 * What the sandbox's spec files share: the small limits their runs get, the bundles under
 * `test/fixtures`, and how much a loaded two-core machine may stretch a run. Host calls are answered by a
 * function that refuses them all, as the dispatcher does for a call a function type lacks.
 */

export const fixture = (name: string) =>
  readFileSync(join(__dirname, '../../test/fixtures', `${name}.cjs`), 'utf8');
/**
 * What CPU time a run that does next to nothing may be charged on a loaded two-core machine (its own
 * binding and answer, with the machine's caches cold); CPU-time checks compare against work well above it.
 */
export const BUSY_MACHINE_QUICK_RUN_MS = 100;
/** How late a loaded two-core machine may end a run past its wall clock and grace (threads wait their turn). */
export const BUSY_MACHINE_LATE_MS = 5_000;
/** A test that does CPU work in an isolate: its wall time stretches with the machine's load. */
export const CPU_TEST_TIMEOUT_MS = 60_000;

/** The names of the host calls runs made with `request` asked for (and were refused), in order. */
export const hostCalls: string[] = [];
const LIMITS = {
  memoryMb: 32,
  cpuTimeMs: 1000,
  wallTimeMs: 3000,
  outputBytes: 1024,
  logLines: 3,
  logLineChars: 80,
  logTotalChars: 100_000,
  abortGraceMs: 500,
};
export const request = (
  code: string,
  input: unknown,
  overrides: Partial<SandboxRequest> = {},
): SandboxRequest => sandboxRequest(LIMITS, code, input, overrides, (name) => hostCalls.push(name));
