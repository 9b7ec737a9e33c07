/** The records bench's flags and fixed figures (see bench/README.md, "Records"). */
import { benchArgs } from '../tools/args';

export const { args, num } = benchArgs();
export const SETTINGS = {
  storeRecords: num('store-records', 20_000),
  pathRecords: num('path-records', 20_000),
  memoryRecords: num('memory-records', 100_000),
  getRequests: num('get-requests', 200),
  /**
   * `--get-warmup`: pages read before the measured ones, not counted. Freshly started services answered the
   * first ~50–100 pages ~1.5× slower (JIT, heap sizing), so 5 measured a service that had just started.
   */
  getWarmup: num('get-warmup', 100),
  /**
   * `--only=memory`: the memory run alone (no store, whole-path or GET phase); `--only=store`: the store
   * phase alone (no stack); `--only=get`: the store phase, one whole-path write of `--path-records` and the
   * GET phase (no 50 %-unchanged path write, no memory run).
   */
  only: args.get('only'),
  /** `--heap-snapshots=DIR`: functions-runtime's main heap written there mid-run and at the end. */
  heapSnapshots: args.get('heap-snapshots'),
  /** `--runtime-node-options=--max-semi-space-size=16`: NODE_OPTIONS for functions-runtime (what Node allows there). */
  runtimeNodeOptions: args.get('runtime-node-options') ?? '',
  /** `--runtime-v8-flags=--trace-gc`: V8 flags set in functions-runtime before the memory run (through its inspector). */
  runtimeV8Flags: args.get('runtime-v8-flags'),
  /**
   * `--alloc-profile=FILE`: a sampling heap profile of functions-runtime over the memory run, of what
   * outlived the young generation (`.heapprofile`, for DevTools' Memory tab or a script).
   */
  allocProfile: args.get('alloc-profile'),
  /** `--memory-series=FILE`: every RSS and heap sample of the memory run written there as JSON (for a plot). */
  memorySeries: args.get('memory-series'),
  /** `--store-dist=DIR`: the store phase loads `DIR/index.js` (another build of records-store, for an A/B in one run). */
  storeDist: args.get('store-dist'),
  /** `--gateway-v8-flags=--trace-gc`: V8 flags set in the gateway at start (its GC lines during the GET phase are counted). */
  gatewayV8Flags: args.get('gateway-v8-flags') ?? '',
  /** `--gateway-node-options=--max-semi-space-size=8`: NODE_OPTIONS for the gateway (what Node allows there). */
  gatewayNodeOptions: args.get('gateway-node-options') ?? '',
  /** `--orchestrator-v8-flags=--trace-gc`: V8 flags set in sync-orchestrator at start (its output is not counted). */
  orchestratorV8Flags: args.get('orchestrator-v8-flags') ?? '',
  /** `--orchestrator-node-options=...`: NODE_OPTIONS for sync-orchestrator (its NATS handlers, not the worker). */
  orchestratorNodeOptions: args.get('orchestrator-node-options') ?? '',
};
/** BENCH_PROFILE=gateway,sync-orchestrator: a V8 CPU profile of each named service over the GET phase, in /tmp/bench-prof/<name>/. */
export const PROFILED = (process.env.BENCH_PROFILE ?? '').split(',').filter(Boolean);
if (SETTINGS.only !== undefined && !['memory', 'store', 'get'].includes(SETTINGS.only)) {
  throw new Error(`--only=${SETTINGS.only}: only --only=memory, --only=store and --only=get are known`);
}
/** The memory verdict: RSS may grow at most this much over the last half of the run (after warm-up). */
export const FLAT_MAX_GROWTH = 0.1;
export const TARGETS = { storePerSecond: 25_000, pathPerSecond: 10_000, getP50Ms: 20 };
export const BATCH = 1000;
