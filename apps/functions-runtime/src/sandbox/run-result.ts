import { FUNCTION_FAILURE_CODES } from '@switchboard/contracts';
import { z } from 'zod';

/**
 * What a script sent with a host call, as the prelude sends it: the one element of an array passed with
 * `arguments: { copy: true }`, so isolated-vm serialises it and this process gets values of its own V8
 * heap. That element is the arguments' JSON text, or, for the records writes, the arguments themselves
 * when the prelude found them to be plain JSON data (prelude/plain-data.ts). Which calls take data is
 * the dispatcher's to say (`HostCall.takesData`); the arguments are untrusted either way.
 *
 * A string passed bare would arrive, when over 1 KB, as an external string over isolated-vm's own copy: V8
 * counts neither its bytes towards any collection trigger nor collects it before a full collection
 * (external strings are made in the old generation), so each ~1 MB batch a sync saved stayed in the
 * process until something else caused a full GC. And the JSON text of a batch, parsed here, put every
 * short string value (up to 10 characters: most ids) into V8's string table, which also only a full
 * collection empties; a structured copy's strings are ordinary young ones (bench/README.md, "Why the current settings").
 */
export type HostCallArgs = { json: string } | { data: object };

export function hostCallArgs(args: unknown): HostCallArgs | undefined {
  if (!Array.isArray(args) || args.length !== 1) return undefined;
  const [sent] = args as unknown[];
  if (typeof sent === 'string') return { json: sent };
  if (typeof sent === 'object' && sent !== null && !Array.isArray(sent)) return { data: sent };
  return undefined;
}

const preludeFailureSchema = z.object({
  status: z.literal('failure'),
  code: z.enum(FUNCTION_FAILURE_CODES),
  message: z.string().max(64 * 1024),
  payload: z.unknown().optional(),
  cause: z.object({ code: z.string().max(128) }).optional(),
});

/**
 * The prelude's answer. It comes out of the isolate, where the script may have tampered with the globals
 * the prelude uses (JSON, String.prototype, ...), so it is checked like any untrusted input; a success
 * keeps its output as the JSON text it is (parsed once, by the caller).
 */
export function parseResult(json: string) {
  const prefix = '{"status":"success"';
  if (json.startsWith(prefix)) {
    const withOutput = `${prefix},"output":`;
    return {
      status: 'success' as const,
      outputJson: json.startsWith(withOutput) ? json.slice(withOutput.length, -1) : undefined,
    };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    parsed = undefined;
  }
  const result = preludeFailureSchema.safeParse(parsed);
  if (!result.success) {
    return {
      status: 'failure' as const,
      error: {
        code: 'script_runtime_error' as const,
        message: 'the function ended with an unreadable result',
      },
    };
  }
  const { code, message, payload, cause } = result.data;
  return {
    status: 'failure' as const,
    error: {
      code,
      message,
      ...(payload !== undefined ? { payload } : {}),
      ...(cause !== undefined ? { cause } : {}),
    },
  };
}
