import { boundRun } from './context';
import type { ScriptValue } from './isolate';

/**
 * The script's calls to the host (nango.*): JSON text in, JSON text back, except the records writes,
 * which send a batch of plain data as a structured copy (plainData).
 */

const hostErrors = new WeakSet<object>();

/** Whether an error is a host call's refusal (its code is the host's). */
export const isHostError = (error: unknown): boolean =>
  typeof error === 'object' && error !== null && hostErrors.has(error);

// At most this many host calls of a run are in flight; the others wait here, in the script's own heap
// (a Promise.all over thousands of calls must not become thousands of host requests at once).
const MAX_IN_FLIGHT = 16;
let inFlight = 0;
const queue: (() => void)[] = [];

// asData: the arguments are plain JSON data (see plainData), and the host takes them as a structured copy
// instead of JSON text. For a records batch: the host's JSON.parse would put every short string value
// (ids, mostly) into V8's string table, which only a full collection empties (bench/README.md).
export const call = async (name: string, args: unknown, asData?: boolean): Promise<ScriptValue> => {
  const { hostCall } = boundRun('nango.' + name);
  // Arguments are taken as they are when the call is made: a copy is made at once (no await comes before
  // it) unless the call must wait for a slot, when its JSON text is made now instead, as for any call.
  const argsJson =
    asData && inFlight < MAX_IN_FLIGHT ? undefined : JSON.stringify(args === undefined ? null : args);
  if (inFlight >= MAX_IN_FLIGHT) await new Promise<void>((resolve) => queue.push(resolve));
  else inFlight++;
  // The arguments go inside an array, copied: isolated-vm then serialises them and the host gets values
  // of its own heap, which its garbage collector sees. A string passed bare, over 1 KB, would arrive as
  // an external string whose bytes the host's V8 does not count (sandbox.ts, "host calls").
  const send = (sent: unknown) =>
    hostCall.apply(undefined, [name, [sent]], {
      arguments: { copy: true },
      result: { promise: true, copy: true },
    });
  let raw: unknown;
  try {
    if (argsJson !== undefined) {
      raw = await send(argsJson);
    } else {
      // The host's side never rejects: a rejection is the copy refused (a Proxy, which plainData cannot
      // see through), and the host has not run the call. JSON text then, as for any other call.
      raw = await send(args).catch(() => send(JSON.stringify(args)));
    }
  } finally {
    const next = queue.shift();
    if (next) next();
    else inFlight--;
  }
  const reply = JSON.parse(raw as string);
  if (reply.ok) return reply.value;
  const error = new Error(reply.error.message) as Error & { code: unknown };
  error.name = 'SwitchboardError';
  error.code = reply.error.code;
  hostErrors.add(error);
  throw error;
};
