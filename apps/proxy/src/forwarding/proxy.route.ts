import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { ProxyError, ProxyForwarder, registerProxyRoutes, writeProxyError } from '@switchboard/proxy-engine';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { PROXY_ENV, type ProxyEnv } from '../config/env';
import { checkedBody, GatewaySignatures, RedisNonces } from '../internal/internal-token';
import { internalSigningKey } from '@switchboard/crypto';
import Redis from 'ioredis';

/**
 * `/proxy/*` as a bare Fastify route: no body parser (the body is streamed to the provider), no Nest
 * pipeline (the reply is written to the socket directly, so nothing buffers a large download).
 */
@Injectable()
export class ProxyRoute implements OnApplicationShutdown {
  private readonly signatures: GatewaySignatures;
  private readonly redis: Redis;
  private readonly logger = new Logger('ProxyRoute');
  private redisWarnedAt = 0;

  constructor(
    private readonly forwarder: ProxyForwarder,
    @Inject(PROXY_ENV) env: ProxyEnv,
  ) {
    const key = internalSigningKey(env);
    // The env schema already refuses a boot without either; this keeps the type honest.
    if (!key) throw new Error('SWITCHBOARD_INTERNAL_TOKEN or SWITCHBOARD_MASTER_KEYS is required');
    // The replicas share spent nonces, so a signed request replayed to another replica is refused too.
    this.redis = new Redis(env.REDIS_URL, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectionName: 'switchboard-proxy',
    });
    this.redis.on('error', () => undefined); // warned about below, when a nonce could not be shared
    this.signatures = new GatewaySignatures(
      key,
      new RedisNonces(this.redis, (error) => {
        if (Date.now() - this.redisWarnedAt < 10_000) return;
        this.redisWarnedAt = Date.now();
        this.logger.warn(
          `Redis unavailable (${error.message}): gateway nonces are checked by this replica alone`,
        );
      }),
    );
  }

  onApplicationShutdown(): void {
    this.redis.disconnect();
  }

  register(fastify: FastifyInstance): void {
    registerProxyRoutes(fastify, (request, reply) => this.handle(request, reply));
  }

  private async handle(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    reply.hijack();
    const res = reply.raw;
    const url = request.raw.url ?? request.url;
    const signed = await this.signatures.verify(request.method, url, request.headers);
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
