/** The bench's stack: each service's environment from the flags and `BENCH_PROFILE`. */
import { join } from 'node:path';
import { PROFILED, SETTINGS } from './settings';

/**
 * A profiled service's, the gateway's and the orchestrator's environment in the bench's stack: the CPU
 * profiler (`BENCH_PROFILE`), V8 flags set at start (`--gateway-v8-flags`, `--orchestrator-v8-flags`) and NODE_OPTIONS given on the
 * command line, all in one NODE_OPTIONS.
 */
export function benchServiceEnv(name: 'gateway' | 'sync-orchestrator'): Record<string, string> | undefined {
  const nodeOptions: string[] = [];
  const env: Record<string, string> = {};
  if (PROFILED.includes(name)) {
    nodeOptions.push(`--require ${join(__dirname, '../../tools/cpu-profile.cjs')}`);
    env.BENCH_PROFILE_DIR = `/tmp/bench-prof/${name}`;
    // Started and stopped by SIGUSR2 around the GET phase.
    env.BENCH_PROFILE_DELAY_MS = 'signal';
  }
  const v8Flags = name === 'gateway' ? SETTINGS.gatewayV8Flags : SETTINGS.orchestratorV8Flags;
  if (v8Flags) {
    nodeOptions.push(`--require ${join(__dirname, '../../tools/v8-flags.cjs')}`);
    env.BENCH_V8_FLAGS = v8Flags;
  }
  const extra = name === 'gateway' ? SETTINGS.gatewayNodeOptions : SETTINGS.orchestratorNodeOptions;
  if (extra) nodeOptions.push(extra);
  if (nodeOptions.length === 0) return undefined;
  return { ...env, NODE_OPTIONS: nodeOptions.join(' ') };
}
