/**
 * The prelude: evaluated in every run's fresh context before the function bundle. It runs inside the
 * isolate (plain V8: no Node, no I/O). scripts/build-sandbox-lib.mjs bundles it into dist/prelude.js, a
 * script that completes with one function, `control(op, ...args)`, that the host holds a reference to
 * (no global names it, so the bundle cannot reach or replace it). Evaluating it takes the library off
 * the global object, shuts string code generation off and installs the globals Nango's runner gives
 * scripts. The control operations:
 *
 * - `bind(hostCall, hostLog, hostSleep, metaJson)`: the run's three host References and its metadata,
 *   once; builds the `nango` object. Answers `'ok'`, or `'early'` when code used a run capability (log,
 *   timer, host call) before it, which a context made ahead of its run must not have done.
 * - `load()`: evaluates the bundle's module top level (`globalThis.__factory`); `'ok'`, `'early'` or `'threw'`.
 * - `start(inputJson)`: loads the bundle if not yet loaded, runs the handler, answers one JSON string.
 * - `run(hostCall, hostLog, hostSleep, metaJson, inputJson)`: `bind` then `start` in one call (one
 *   crossing into the isolate instead of two); when bind does not answer `'ok'`, its answer after a NUL.
 * - `abort(message)`: fires the script's abortSignal.
 * - `warm(parts)` / `used()`: evaluate library parts (comma-separated) / which ones this context used.
 *
 * Nothing run-specific is in the context before `bind` (sandbox.ts, "ready contexts").
 *
 * Everything crossing the boundary is copied, never a host object: a script can only ever touch objects of
 * its own heap. What comes in is JSON text; host calls send JSON text too, except the records writes,
 * which send a batch of plain data as a structured copy (plain-data.ts).
 */
import { createAbortSignal } from './abort-signal';
import { bindRun, isBound, takeGlobals, usedEarly, usedParts, warmParts } from './context';
import { installGlobals } from './globals';
import type { HostReference, ScriptValue } from './isolate';
import { makeNango } from './nango';
import { load, start } from './run';

/**
 * No code generation from strings, no WebAssembly. isolated-vm has no switch for V8's
 * AllowCodeGenerationFromStrings, so every way to reach the Function constructors is replaced. This is
 * defence in depth: code made this way would still be inside the isolate. zod notices (its eval probe
 * throws) and stays in its interpreted mode.
 */
function refuseCodeGeneration(): void {
  const g = globalThis as unknown as Record<string, unknown>;
  const refuse = function () {
    throw new EvalError('Code generation from strings is disabled in functions');
  };
  const ctors = [
    Function,
    Object.getPrototypeOf(async function () {}).constructor,
    Object.getPrototypeOf(function* () {}).constructor,
    Object.getPrototypeOf(async function* () {}).constructor,
  ] as { prototype: object }[];
  for (const C of ctors) {
    Object.defineProperty(C.prototype, 'constructor', {
      value: refuse,
      writable: false,
      configurable: false,
    });
  }
  refuse.prototype = Function.prototype;
  Object.defineProperty(g, 'Function', { value: refuse, writable: false, configurable: false });
  Object.defineProperty(g, 'eval', { value: refuse, writable: false, configurable: false });
  delete g.WebAssembly;
}

takeGlobals();
refuseCodeGeneration();
installGlobals();

const { signal: abortSignal, abort } = createAbortSignal();
let nango: ScriptValue;

const bind = (call: HostReference, logRef: HostReference, sleepRef: HostReference, metaJson: string) => {
  if (isBound()) return 'bound';
  bindRun({ hostCall: call, hostLog: logRef, hostSleep: sleepRef, meta: JSON.parse(metaJson) });
  nango = makeNango(abortSignal);
  return usedEarly() ? 'early' : 'ok';
};

// Bind and start in one crossing, for a context whose bundle is loaded already (a ready context): a
// context that cannot take the run answers what bind said after a NUL (a result is JSON, never so).
const run = async (
  call: HostReference,
  logRef: HostReference,
  sleepRef: HostReference,
  metaJson: string,
  inputJson: string | undefined,
): Promise<string> => {
  const taken = bind(call, logRef, sleepRef, metaJson);
  return taken === 'ok' ? start(nango, inputJson) : '\u0000' + taken;
};

export function control(op: string, a?: any, b?: any, c?: any, d?: any, e?: any): unknown {
  if (op === 'run') return run(a, b, c, d, e);
  if (op === 'bind') return bind(a, b, c, d);
  if (op === 'load') return load();
  if (op === 'start') return start(nango, a);
  if (op === 'abort') return abort(a);
  if (op === 'warm') return warmParts(a);
  if (op === 'used') return usedParts();
  throw new Error('unknown control ' + op);
}
