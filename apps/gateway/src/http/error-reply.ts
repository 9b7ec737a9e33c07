import type { ErrorBody, ErrorCode, FieldError } from '@switchboard/contracts';
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
