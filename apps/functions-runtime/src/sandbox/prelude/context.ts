import type { HostReference, PartName, RunMeta, SandboxLib } from './isolate';
import { PARTS } from './isolate';

/**
 * What this context holds: the library and the host's crypto (taken off the global object when the prelude
 * is evaluated), and the one run it serves, once bound. A context serves one run (sandbox.ts): this state
 * is the context's, never shared between runs.
 */
export interface BoundRun {
  hostCall: HostReference;
  hostLog: HostReference;
  hostSleep: HostReference;
  meta: RunMeta;
}

let lib: SandboxLib;
let hostCrypto: HostReference;
let run: BoundRun | undefined;
// A run capability was used before bind (a module top level evaluated ahead of its run): the host then
// drops this context and starts the run on a new one, where the top level runs after bind as before.
let early = false;

/** Takes the library and the host's crypto off the global object, where sandbox.ts put them. */
export function takeGlobals(): void {
  const g = globalThis as unknown as { __sandboxLib: SandboxLib; __hostCrypto: HostReference };
  lib = g.__sandboxLib;
  hostCrypto = g.__hostCrypto;
  delete (g as Partial<typeof g>).__sandboxLib;
  delete (g as Partial<typeof g>).__hostCrypto;
}

export function bindRun(bound: BoundRun): void {
  run = bound;
}

export function isBound(): boolean {
  return run !== undefined;
}

export function usedEarly(): boolean {
  return early;
}

/** The bound run; before bind, a run capability is refused (and the context marked as used early). */
export function boundRun(what: string): BoundRun {
  if (run === undefined) {
    early = true;
    throw new Error(what + ' is not available before the run starts');
  }
  return run;
}

/** The bound run's metadata (only read once the run is bound). */
export function meta(): RunMeta {
  if (run === undefined) throw new Error('the run is not bound');
  return run.meta;
}

export function cryptoReference(): HostReference {
  return hostCrypto;
}

// The library's parts are evaluated on first use (sandbox-lib/entry.js): a run pays only for what it touches.
// Which parts the script reached for (its module top level included): the host reads them after the run
// (usedParts), and has them evaluated ahead in the next context of the same function version.
const touched: Record<PartName, boolean> = {
  zod: false,
  URL: false,
  URLSearchParams: false,
  Buffer: false,
  fflate: false,
  soap: false,
};

export function part(name: PartName): any {
  touched[name] = true;
  return lib[name]();
}

/** A part already evaluated, without evaluating it (nor counting it as used). */
export function peekPart(name: PartName): any {
  return lib[name].peek();
}

export function botbuilderPart(): any {
  return lib.botbuilder();
}

let zodConfigured = false;
function configureZod(): any {
  const z = lib.zod();
  if (!zodConfigured) {
    z.config({ jitless: true });
    zodConfigured = true;
  }
  return z;
}

export function zod(): any {
  touched.zod = true;
  return configureZod();
}

export function Buffer(): any {
  return part('Buffer');
}

/** Evaluates library parts (comma-separated) ahead of the run, without counting them as used. */
export function warmParts(parts: string): void {
  for (const name of String(parts).split(',')) {
    if (name === 'zod') configureZod();
    else if ((PARTS as readonly string[]).includes(name)) lib[name as PartName]();
  }
}

// Read after the run by the host, whatever the script did to this context's built-ins: plain loops only.
// Only what the script reached for counts, not what warm evaluated (a part it stops using is dropped).
export function usedParts(): string {
  let out = '';
  for (let i = 0; i < PARTS.length; i++) if (touched[PARTS[i]!]) out += (out ? ',' : '') + PARTS[i]!;
  return out;
}
