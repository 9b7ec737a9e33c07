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

export function sendError(
  reply: FastifyReply,
  code: ErrorCode,
  message?: string,
  errors?: FieldError[],
  payload?: unknown,
): FastifyReply {
  return reply
    .status(statusForCode(code))
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
  res.writeHead(statusForCode(error.code), {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}
