import { SwitchboardError, type ErrorCode, type FieldError } from '@switchboard/contracts';

/** A failure of the proxy itself (never a provider's answer, which is passed through unchanged). */
export class ProxyError extends SwitchboardError {
  constructor(
    code: ErrorCode,
    message: string,
    /** Headers the caller needs with this error (e.g. Retry-After on a governed 429). */
    readonly headers: Record<string, string> = {},
    errors?: FieldError[],
  ) {
    super(code, message, errors);
  }
}

/** Thrown by the egress connector; recognised through `code` because undici may rewrap errors. */
export class EgressRefusedError extends Error {
  readonly code = 'SWITCHBOARD_EGRESS_REFUSED';
  constructor(readonly reason: string) {
    super(`egress refused: ${reason}`);
  }
}

/**
 * Statuses for the codes the proxy answers with when called directly. Behind the gateway these are
 * only a fallback: the gateway re-emits every proxy error with the status from its own table.
 */
const STATUS: Partial<Record<ErrorCode, number>> = {
  invalid_headers: 400,
  invalid_uri_params: 400,
  invalid_connection: 400,
  invalid_credentials: 400,
  refresh_token_external_error: 400,
  forbidden: 403,
  egress_refused: 403,
  unknown_provider_config: 404,
  unknown_connection: 404,
  connection_refresh_backoff: 424,
  connection_refresh_exhausted: 424,
  too_many_request: 429,
  bad_gateway: 502,
  service_unavailable: 503,
  gateway_timeout: 504,
};

export function fallbackStatus(code: ErrorCode): number {
  return STATUS[code] ?? 500;
}
