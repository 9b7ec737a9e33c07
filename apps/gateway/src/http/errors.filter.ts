import { Catch, HttpException, Logger, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { SwitchboardError, type ErrorCode } from '@switchboard/contracts';
import type { FastifyReply } from 'fastify';
import { sendError } from './error-reply';

/** Fastify's own errors (raised before a handler runs) and what a user should see for each. */
const FASTIFY_CODES: Record<string, { code: ErrorCode; message: string }> = {
  FST_ERR_CTP_BODY_TOO_LARGE: { code: 'payload_too_large', message: 'The request body is too large' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    code: 'invalid_content_type',
    message: 'Unsupported Content-Type; send application/json',
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: {
    code: 'invalid_body',
    message: 'Content-Length does not match the body',
  },
  FST_ERR_CTP_EMPTY_JSON_BODY: { code: 'invalid_json', message: 'The JSON body is empty' },
  FST_ERR_CTP_INVALID_JSON_BODY: { code: 'invalid_json', message: 'Invalid JSON body' },
  FST_ERR_BAD_URL: { code: 'invalid_uri_params', message: 'The URL is malformed' },
};

const HTTP_STATUS_CODES: Record<number, ErrorCode> = {
  400: 'invalid_body',
  404: 'route_not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'invalid_content_type',
};

/**
 * Every error leaves the gateway as `{ error: { code, message?, errors? } }`. Unknown failures become a
 * generic 500 whose details go to the log, never to the caller (they may hold secrets).
 */
@Catch()
export class ErrorsFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');

  catch(exception: unknown, host: ArgumentsHost): void {
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    if (exception instanceof SwitchboardError) {
      sendError(reply, exception.code, exception.message, exception.errors, exception.payload);
      return;
    }
    const fastifyCode = (exception as { code?: string })?.code;
    const known = fastifyCode ? FASTIFY_CODES[fastifyCode] : undefined;
    if (known) {
      sendError(reply, known.code, known.message);
      return;
    }
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      const code = HTTP_STATUS_CODES[status];
      if (code === 'route_not_found') {
        sendError(reply, code, 'No route matches this method and path');
        return;
      }
      if (code) {
        sendError(reply, code, exception.message);
        return;
      }
    }
    const status = (exception as { statusCode?: number })?.statusCode;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      sendError(reply, HTTP_STATUS_CODES[status] ?? 'invalid_body', 'The request was not understood');
      return;
    }
    this.logger.error(`unhandled error: ${(exception as Error)?.stack ?? String(exception)}`);
    sendError(reply, 'server_error', 'An unexpected error occurred');
  }
}
