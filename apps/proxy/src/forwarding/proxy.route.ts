import { Inject, Injectable } from '@nestjs/common';
import { ProxyError, ProxyForwarder, registerProxyRoutes, writeProxyError } from '@switchboard/proxy-engine';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { PROXY_ENV, type ProxyEnv } from '../config/env';
import { internalSigningKey, verifyGatewayCaller } from '../internal/internal-token';

/**
 * `/proxy/*` as a bare Fastify route: no body parser (the body is streamed to the provider), no Nest
 * pipeline (the reply is written to the socket directly, so nothing buffers a large download).
 */
@Injectable()
export class ProxyRoute {
  private readonly key: Buffer;

  constructor(
    private readonly forwarder: ProxyForwarder,
    @Inject(PROXY_ENV) env: ProxyEnv,
  ) {
    this.key = internalSigningKey(env);
  }

  register(fastify: FastifyInstance): void {
    registerProxyRoutes(fastify, (request, reply) => this.handle(request, reply));
  }

  private async handle(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    reply.hijack();
    const res = reply.raw;
    const url = request.raw.url ?? request.url;
    const signed = verifyGatewayCaller(this.key, request.method, url, request.headers);
    if (!signed) {
      writeProxyError(
        res,
        new ProxyError('forbidden', 'The proxy only accepts requests relayed by the gateway'),
      );
      return;
    }
    const { credentialsOnAnyOrigin, ...caller } = signed;
    const error = await this.forwarder.handle({
      caller,
      method: request.method,
      url,
      req: request.raw,
      res,
      credentialsOnAnyOrigin,
    });
    if (error) writeProxyError(res, error);
  }
}
