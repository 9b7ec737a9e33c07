import { meta, usedEarly } from './context';
import { describeError, failure, plain } from './failures';
import { isHostError } from './host-calls';
import type { ScriptValue } from './isolate';
import { requireModule } from './modules';

/** Loading the bundle (its module top level) and running its handler. */

const bundleModule: { exports: ScriptValue } = { exports: {} };
let loaded = false;
let loadFailure: string | undefined;

/** Evaluates the bundle's module top level (`globalThis.__factory`, sandbox.ts) once. */
export const load = (): 'ok' | 'early' | 'threw' => {
  if (!loaded) {
    loaded = true;
    const g = globalThis as unknown as {
      __factory?: (module: object, exports: object, require: unknown) => void;
    };
    try {
      g.__factory!(bundleModule, bundleModule.exports, requireModule);
    } catch (error) {
      const message = error && (error as Error).message ? (error as Error).message : String(error);
      loadFailure = failure('script_load_error', 'the bundle threw while loading: ' + message);
    } finally {
      delete g.__factory;
    }
  }
  return loadFailure !== undefined ? 'threw' : usedEarly() ? 'early' : 'ok';
};

/** Runs the handler for the bound run: one JSON string, a success with its output or a failure. */
export const start = async (nango: ScriptValue, inputJson: string | undefined): Promise<string> => {
  load();
  if (loadFailure !== undefined) return loadFailure;
  const m = meta();
  const exported = bundleModule.exports;
  const def = exported && (exported.default || exported);
  // A sync's webhook handler: zero-yaml createSync({ onWebhook }), or a legacy script's named export.
  const webhookHandler =
    m.entry === 'onWebhook'
      ? (def && typeof def.onWebhook === 'function' && def.onWebhook) ||
        (exported &&
          typeof exported.onWebhookPayloadReceived === 'function' &&
          exported.onWebhookPayloadReceived)
      : undefined;
  if (m.entry === 'onWebhook' && !webhookHandler) {
    return failure(
      'script_load_error',
      'the bundle has no webhook handler (onWebhook or onWebhookPayloadReceived)',
    );
  }
  // A zero-yaml definition's exec, or a legacy script's default-exported function (fetchData(nango),
  // runAction(nango, input), an on-event script), as bundles of older CLIs export them.
  const exec =
    def && typeof def.exec === 'function'
      ? (...args: unknown[]) => def.exec(...args)
      : typeof def === 'function'
        ? (...args: unknown[]) => def(...args)
        : undefined;
  if (!webhookHandler && !exec) {
    return failure(
      'script_load_error',
      'the bundle does not export a function definition with exec() or a default function',
    );
  }
  const input: unknown = inputJson === undefined ? undefined : JSON.parse(inputJson);
  try {
    let output: unknown;
    if (webhookHandler) {
      output = await webhookHandler(nango, input);
    } else if (m.type === 'action') {
      if (def.input && typeof def.input.safeParse === 'function') {
        const parsed = def.input.safeParse(input);
        if (!parsed.success) {
          return failure('script_invalid_input', "the input does not match the action's input schema", {
            payload: plain(parsed.error.issues),
          });
        }
      }
      output = await exec!(nango, input);
      if (def.output && typeof def.output.safeParse === 'function') {
        const parsed = def.output.safeParse(output);
        if (!parsed.success) {
          return failure('script_invalid_output', "the output does not match the action's output schema", {
            payload: plain(parsed.error.issues),
          });
        }
      }
    } else {
      // on-event scripts and syncs (a sync's onWebhook comes with webhook runs).
      output = await exec!(nango);
    }
    return successOf(output, m.outputLimitBytes);
  } catch (error) {
    return describeError(error, isHostError, m.type === 'action');
  }
};

/** A success with its output as JSON, or the failure of an output that is not JSON or is over the limit. */
export function successOf(output: unknown, outputLimitBytes: number): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(output);
  } catch (error) {
    return failure('script_runtime_error', 'the output is not JSON: ' + (error as Error).message);
  }
  // Characters never outnumber UTF-8 bytes: over the limit here is over it for sure, and is not copied out.
  if (json !== undefined && json.length > outputLimitBytes) {
    return failure('script_output_too_large', 'the output is over ' + outputLimitBytes + ' bytes');
  }
  return (
    JSON.stringify({ status: 'success' }).slice(0, -1) +
    (json === undefined ? '}' : ',"output":' + json + '}')
  );
}
