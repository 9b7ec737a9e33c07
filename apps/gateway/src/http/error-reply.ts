import type { ServerResponse } from 'node:http';
import type { ErrorBody, ErrorCode, FieldError, SwitchboardError } from '@switchboard/contracts';
import type { FastifyReply } from 'fastify';
import { statusForCode } from './error-status';

export function errorBody(
  code: ErrorCode,
  message?: string,
  errors?: FieldError[],
  payload?: unknown,
): ErrorBody {
  return {
    error: {
      code,
      ...(message ? { message } : {}),
      ...(errors?.length ? { errors } : {}),
      ...(payload !== undefined ? { payload } : {}),
    },
  };
}

/**
 * Seconds a caller should wait before retrying a 503: a service or one of its dependencies is away (no
 * replica answered on NATS, Temporal unreachable), which clears by itself.
 */
export const UNAVAILABLE_RETRY_AFTER_S = '5';

export function sendError(
  reply: FastifyReply,
  code: ErrorCode,
  message?: string,
  errors?: FieldError[],
  payload?: unknown,
): FastifyReply {
  const status = statusForCode(code);
  if (status === 503 && !reply.hasHeader('retry-after'))
    reply.header('Retry-After', UNAVAILABLE_RETRY_AFTER_S);
  return reply
    .status(status)
    .type('application/json')
    .send(errorBody(code, message, errors, payload));
}

/**
 * One of our errors written on a raw response (the front doors' direct lanes), as `sendError` writes it on
 * the Fastify path: same status table, body and content type, with `headers` (CORS, …). An answer already
 * under way is cut off instead.
 */
export function writeErrorResponse(
  res: ServerResponse,
  error: SwitchboardError,
  headers: Record<string, string | number>,
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify(errorBody(error.code, error.message, error.errors));
  const status = statusForCode(error.code);
  res.writeHead(status, {
    ...(status === 503 ? { 'retry-after': UNAVAILABLE_RETRY_AFTER_S } : {}),
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}
