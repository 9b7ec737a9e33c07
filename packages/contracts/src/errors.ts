import { z } from 'zod';

/**
 * Every error code a Switchboard service may put on the wire. The gateway maps each one to an HTTP
 * status in one exhaustive table, so adding a code here without a status fails to compile there.
 * Names follow Nango's public codes where one exists, so migrating clients keep matching on them.
 */
export const ERROR_CODES = [
  'missing_auth_header',
  'malformed_auth_header',
  'invalid_secret_key_format',
  'unknown_account',
  'forbidden',
  'too_many_request',
  'invalid_json',
  'invalid_body',
  'invalid_query_params',
  'invalid_uri_params',
  'invalid_headers',
  'invalid_content_type',
  'payload_too_large',
  'not_found',
  'route_not_found',
  'method_not_allowed',
  'unknown_provider_config',
  'unknown_connection',
  'unknown_environment',
  'conflict',
  'service_unavailable',
  'gateway_timeout',
  'server_error',
  // Console sign-in
  /** No console session cookie, or one that is unknown, expired or signed out. */
  'console_session_required',
  /** A cookie-authenticated write without the session's `X-CSRF-Token`, or from another origin. */
  'csrf_token_invalid',
  // Connect sessions and auth flows
  'invalid_connect_session_token_format',
  'unknown_connect_session_token',
  'integration_not_allowed',
  'invalid_auth_mode',
  'invalid_connection',
  'connection_test_failed',
  'unknown_provider_template',
  // Credentials and refresh
  'invalid_credentials',
  'refresh_token_external_error',
  'connection_refresh_backoff',
  'connection_refresh_exhausted',
  // Proxy
  'egress_refused',
  'bad_gateway',
  // Provider webhooks
  'invalid_signature',
  'feature_disabled',
  // Functions and actions
  'invalid_cli_version',
  'ambiguous_function',
  'disabled_resource',
  'action_script_runtime_error',
  'action_script_failure',
  /** A plain error thrown by an action (Nango's runner code); `payload` = `{name, message}`. */
  'script_internal_error',
  'invalid_action_input',
  'invalid_action_output',
  'action_output_too_large',
  'script_timeout',
  // Syncs
  'missing_provider_config_key',
  'no_syncs_found',
  'unknown_sync',
  'invalid_variant',
  'sync_variant_already_exists',
  'resource_capped',
  'sync_interval_too_short',
  /** A records cursor (`cursor`, `until_cursor`) that does not decode to one we gave out. */
  'invalid_cursor',
  /**
   * A sync script's write (records, checkpoint) named a run that is no longer the sync's current run
   * (cancelled by a full resync, abandoned, or an earlier attempt of a retried run): refused, nothing written.
   */
  'sync_run_superseded',
  /** A validate-connection script refused a new connection (Nango's code). */
  'connection_validation_failed',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export const fieldErrorSchema = z.object({
  code: z.string(),
  message: z.string(),
  path: z.array(z.union([z.string(), z.number()])),
});
export type FieldError = z.infer<typeof fieldErrorSchema>;

/** The public error body: `{ error: { code, message?, errors? } }` (Nango's modern shape). */
export const errorBodySchema = z
  .object({
    error: z.object({
      code: z.string(),
      message: z.string().optional(),
      errors: z.array(fieldErrorSchema).optional(),
      /** Details for codes that carry some (an ActionError's payload, the matches of an ambiguous name). */
      payload: z.unknown().optional(),
    }),
  })
  .meta({ id: 'Error' });
export type ErrorBody = z.infer<typeof errorBodySchema>;

/** What a NATS handler returns when it fails; `details` carries per-field errors when there are some. */
export const wireErrorSchema = z.object({
  code: z.enum(ERROR_CODES),
  message: z.string(),
  errors: z.array(fieldErrorSchema).optional(),
  payload: z.unknown().optional(),
});
export type WireError = z.infer<typeof wireErrorSchema>;

/** Base class of every coded domain error; each bounded context subclasses it once. */
export class SwitchboardError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly errors?: FieldError[],
    /** Sent to the caller as `error.payload` (JSON); never put secrets in it. */
    readonly payload?: unknown,
  ) {
    super(message);
    this.name = new.target.name;
  }

  toWire(): WireError {
    return {
      code: this.code,
      message: this.message,
      ...(this.errors ? { errors: this.errors } : {}),
      ...(this.payload !== undefined ? { payload: this.payload } : {}),
    };
  }
}

/**
 * Converts zod issues to the public per-field error list. zod reports unknown keys as one issue on
 * the enclosing object; each one becomes its own entry whose path names the key, so a caller can
 * point at the offending field like at any other.
 */
export function fieldErrorsFromZod(error: z.ZodError, pathPrefix: (string | number)[] = []): FieldError[] {
  return error.issues.flatMap((issue): FieldError[] => {
    const path = [...pathPrefix, ...issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))];
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({
        code: issue.code,
        message: `Unrecognized key: "${key}"`,
        path: [...path, key],
      }));
    }
    return [{ code: issue.code, message: issue.message, path }];
  });
}
