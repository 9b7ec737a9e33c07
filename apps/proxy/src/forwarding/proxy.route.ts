import { Inject, Injectable } from '@nestjs/common';
import { ProxyError, ProxyForwarder, registerProxyRoutes, writeProxyError } from '@switchboard/proxy-engine';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { PROXY_ENV, type ProxyEnv } from '../config/env';
import { checkedBody, GatewaySignatures } from '../internal/internal-token';
import { internalSigningKey } from '@switchboard/crypto';

/**
 * `/proxy/*` as a bare Fastify route: no body parser (the body is streamed to the provider), no Nest
 * pipeline (the reply is written to the socket directly, so nothing buffers a large download).
 */
@Injectable()
export class ProxyRoute {
  private readonly signatures: GatewaySignatures;

  constructor(
    private readonly forwarder: ProxyForwarder,
    @Inject(PROXY_ENV) env: ProxyEnv,
  ) {
    const key = internalSigningKey(env);
    // The env schema already refuses a boot without either; this keeps the type honest.
    if (!key) throw new Error('SWITCHBOARD_INTERNAL_TOKEN or SWITCHBOARD_MASTER_KEYS is required');
    this.signatures = new GatewaySignatures(key);
  }

  register(fastify: FastifyInstance): void {
    registerProxyRoutes(fastify, (request, reply) => this.handle(request, reply));
  }

  private async handle(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    reply.hijack();
    const res = reply.raw;
    const url = request.raw.url ?? request.url;
    const signed = this.signatures.verify(request.method, url, request.headers);
    if (!signed) {
      writeProxyError(
        res,
        new ProxyError('forbidden', 'The proxy only accepts requests relayed by the gateway'),
      );
      return;
    }
    // Nothing goes to the provider before the body is known to be the one the gateway signed.
    const body = await checkedBody(request.raw, signed.bodyDigest);
    if (body === 'mismatch') {
      writeProxyError(res, new ProxyError('forbidden', 'The request body is not the one the gateway signed'));
      return;
    }
    const { credentialsOnAnyOrigin, candidate, ...caller } = signed.caller;
    const error = await this.forwarder.handle({
      caller,
      method: request.method,
      url,
      req: request.raw,
      res,
      credentialsOnAnyOrigin,
      ...(candidate ? { candidate } : {}),
      ...(body === 'stream' ? {} : { body: body ?? null }),
    });
    if (error) writeProxyError(res, error);
  }
}
