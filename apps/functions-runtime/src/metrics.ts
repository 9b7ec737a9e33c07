import { AttributeSets, durationHistogram, meterFor } from '@switchboard/observability';

const meter = meterFor('@switchboard/functions-runtime');

/**
 * `switchboard.function.run.duration`: each function run's wall time (as the sandbox measured it), by
 * function type (`action`, `sync`, `webhook`, ...), status (`success`/`failure`) and, for a failure,
 * `error.type` (its failure code). Function names are left out: customers choose them, so they are unbounded.
 */
const runs = durationHistogram(
  meter,
  'switchboard.function.run.duration',
  'Function run durations, by type and outcome',
);
const sets = new AttributeSets();

export function recordFunctionRun(
  type: string,
  status: string,
  durationMs: number,
  errorCode?: string,
): void {
  runs.record(
    durationMs / 1000,
    sets.get(`${type}\u0000${status}\u0000${errorCode ?? ''}`, () => ({
      'switchboard.function.type': type,
      'switchboard.function.status': status,
      ...(errorCode ? { 'error.type': errorCode } : {}),
    })),
  );
}
