import type { ServerResponse } from 'node:http';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { PROXY_INTERNAL_HEADERS, SwitchboardError, type ErrorCode } from '@switchboard/contracts';
import { currentTraceId, trace } from '@switchboard/observability';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { PROXY_ENV, type ProxyEnv } from '../config/env';
import { internalSigningKey, verifyGatewayCaller } from '../internal/internal-token';
import { ProxyForwarder } from './forwarder';
import { fallbackStatus, ProxyError } from './proxy.errors';

/** Every method the official client can send, plus HEAD and OPTIONS. */
export const PROXY_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'PROPFIND', 'REPORT'];

/**
 * `/proxy/*` as a bare Fastify route: no body parser (the body is streamed to the provider), no Nest
 * pipeline (the reply is written to the socket directly, so nothing buffers a large download).
 */
@Injectable()
export class ProxyRoute {
  private readonly logger = new Logger('Proxy');
  private readonly key: Buffer;

  constructor(
    private readonly forwarder: ProxyForwarder,
    @Inject(PROXY_ENV) env: ProxyEnv,
  ) {
    this.key = internalSigningKey(env);
  }

  register(fastify: FastifyInstance): void {
    for (const method of ['PROPFIND', 'REPORT']) {
      if (!fastify.supportedMethods.includes(method)) fastify.addHttpMethod(method, { hasBody: true });
    }
    void fastify.register(async (scope) => {
      // Leave the body unread: the handler streams it.
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser('*', (_req, _payload, done) => done(null));
      const handler = (request: FastifyRequest, reply: FastifyReply) => this.handle(request, reply);
      for (const url of ['/proxy', '/proxy/*']) {
        scope.route({ method: PROXY_METHODS, url, exposeHeadRoute: false, handler });
      }
    });
  }

  private async handle(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    reply.hijack();
    const res = reply.raw;
    const url = request.raw.url ?? request.url;
    const caller = verifyGatewayCaller(this.key, request.method, url, request.headers);
    if (!caller) {
      writeError(res, new ProxyError('forbidden', 'The proxy only accepts requests relayed by the gateway'));
      return;
    }
    const controller = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) controller.abort();
    });
    try {
      await this.forwarder.forward({ caller, method: request.method, url, req: request.raw, res, signal: controller.signal });
    } catch (error) {
      if (controller.signal.aborted) return;
      if (error instanceof SwitchboardError) {
        writeError(res, error);
        return;
      }
      this.logger.error(`proxy call failed (trace ${currentTraceId() ?? '-'}): ${(error as Error)?.stack ?? String(error)}`);
      trace.getActiveSpan()?.recordException(error as Error);
      writeError(res, new ProxyError('server_error', 'An unexpected error occurred in the proxy'));
    }
  }
}

function writeError(res: ServerResponse, error: SwitchboardError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const code: ErrorCode = error.code;
  const body = JSON.stringify({ error: { code, message: error.message, ...(error.errors?.length ? { errors: error.errors } : {}) } });
  res.writeHead(fallbackStatus(code), {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    [PROXY_INTERNAL_HEADERS.errorCode]: code,
    ...(error instanceof ProxyError ? error.headers : {}),
  });
  res.end(body);
}
