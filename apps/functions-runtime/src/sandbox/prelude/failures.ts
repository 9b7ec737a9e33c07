import type { ScriptValue } from './isolate';

/** Most characters of a failure's message (and of an action error's message in its payload). */
export const MESSAGE_CHARS = 4000;

/** A value as JSON would carry it, or undefined when it cannot be (a cycle, a bigint, a function). */
export function plain(value: unknown): ScriptValue {
  try {
    const json = JSON.stringify(value);
    return json === undefined ? undefined : JSON.parse(json);
  } catch {
    return undefined;
  }
}

/** A run's failure, as the JSON text the host parses (sandbox.ts, preludeFailureSchema). */
export function failure(code: string, message: unknown, extra?: Record<string, unknown>): string {
  return JSON.stringify(
    Object.assign({ status: 'failure', code, message: String(message).slice(0, MESSAGE_CHARS) }, extra || {}),
  );
}

/** What the thrown value is: an ActionError, a host call's refusal, the memory limit, or the script's own. */
export function describeError(
  error: ScriptValue,
  isHostError: (error: unknown) => boolean,
  isAction: boolean,
): string {
  if (error && error.type === 'action_script_runtime_error') {
    return failure('action_script_runtime_error', error.message || 'action error', {
      payload: plain(error.payload),
    });
  }
  if (error && isHostError(error)) {
    if (error.code === 'script_forbidden_call') return failure('script_forbidden_call', error.message);
    return failure('script_runtime_error', error.message, { cause: { code: String(error.code) } });
  }
  // The isolate's allocator refusing a typed array is the memory limit, even if V8 lets the script see it.
  if (error instanceof RangeError && /allocation failed/.test(error.message)) {
    return failure('script_memory_limit', 'the function ran out of memory: ' + error.message);
  }
  // An action's error also gives its name and message apart: the API answers them as Nango's runner does.
  const thrownPayload = (name: string, message: unknown) =>
    isAction ? { payload: { name, message: String(message).slice(0, MESSAGE_CHARS) } } : undefined;
  if (error instanceof Error) {
    const name = error.name || 'Error';
    return failure('script_runtime_error', name + ': ' + error.message, thrownPayload(name, error.message));
  }
  const thrown = plain(error) === undefined ? String(error) : JSON.stringify(plain(error));
  return failure('script_runtime_error', 'the function threw ' + thrown, thrownPayload('Error', thrown));
}

/** nango.ActionError: thrown by an action to answer its caller with a payload of its own. */
export class ActionError extends Error {
  type = 'action_script_runtime_error';
  declare payload?: unknown;
  constructor(payload?: ScriptValue) {
    super(payload && typeof payload.message === 'string' ? payload.message : 'action error');
    if (payload !== undefined) this.payload = payload;
  }
}
