import type { KeyObject } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import {
  ERROR_CODES,
  HOP_BY_HOP_HEADERS,
  INTERNAL_HEADER_PREFIX,
  PROXY_INTERNAL_HEADERS,
  PROXY_SIGNED_BODY_MAX_BYTES,
  type Caller,
  type ErrorCode,
  type FieldError,
} from '@switchboard/contracts';
import { endClientSpan, startClientSpan } from '@switchboard/observability';
import { forwardedResponseHeaders, hasBody, relay } from '@switchboard/proxy-engine';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Pool, type Dispatcher } from 'undici';
import { GATEWAY_ENV, type GatewayEnv } from '../config/env';
import { sendError } from '../http/error-reply';
import { ProxyRoute } from './proxy-route';
import { internalSigningKey, proxyBodyDigest, signProxyCall } from '@switchboard/crypto';

/** Request headers that must not reach the proxy service: per-hop ones, the caller's key, trace headers (re-injected for our hop). */
const DROPPED_REQUEST = new Set(['host', 'authorization', 'expect', 'traceparent', 'tracestate', 'baggage']);

function tokens(value: string | string[] | undefined): Set<string> {
  const joined = Array.isArray(value) ? value.join(',') : (value ?? '');
  return new Set(
    joined
      .split(',')
      .map((t) => t.trim().toLowerCase())
      .filter(Boolean),
  );
}

function relayedRequestHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const listed = tokens(headers.connection);
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || DROPPED_REQUEST.has(name) || HOP_BY_HOP_HEADERS.has(name) || listed.has(name))
      continue;
    // A client could otherwise pose as the gateway towards the proxy service.
    if (name.startsWith(INTERNAL_HEADER_PREFIX)) continue;
    out[name] = value;
  }
  return out;
}

/**
 * The body in memory when its declared length is at most PROXY_SIGNED_BODY_MAX_BYTES (undefined when
 * there is none), `stream` when it is larger or chunked, `too_large` when it runs past what it declared.
 */
async function heldBody(request: FastifyRequest): Promise<Buffer | undefined | 'stream' | 'too_large'> {
  if (!hasBody(request.headers)) return undefined;
  const declared = request.headers['content-length'];
  if (declared === undefined || Number(declared) > PROXY_SIGNED_BODY_MAX_BYTES) return 'stream';
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request.raw as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > PROXY_SIGNED_BODY_MAX_BYTES) return 'too_large';
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

const isErrorCode = (code: string): code is ErrorCode => (ERROR_CODES as readonly string[]).includes(code);

/**
 * Remote mode (`SWITCHBOARD_PROXY_MODE=remote`): streams the request to the proxy service (no body parser,
 * no buffering), signing which environment is calling, and streams the answer back. The proxy's own
 * errors come back marked and are re-emitted here with the status of the gateway's one status table.
 */
@Injectable()
export class ProxyRelay extends ProxyRoute implements OnApplicationShutdown {
  private readonly logger = new Logger('ProxyRelay');
  private readonly pool: Pool;
  private readonly origin: string;
  private readonly key: KeyObject;

  constructor(@Inject(GATEWAY_ENV) env: GatewayEnv) {
    super();
    // No timeouts on this hop: the proxy service enforces the provider's, and may legitimately wait out retries.
    // The env schema requires both in remote mode; this class is only built there.
    const url = env.SWITCHBOARD_PROXY_URL!;
    this.origin = new URL(url).origin;
    this.pool = new Pool(url, { headersTimeout: 0, bodyTimeout: 0, keepAliveTimeout: 30_000 });
    this.key = internalSigningKey(env)!;
  }

  async onApplicationShutdown(): Promise<void> {
    await this.pool.close().catch(() => undefined);
  }

  protected async forward(
    request: FastifyRequest,
    reply: FastifyReply,
    caller: Caller,
    credentialsOnAnyOrigin: boolean,
  ): Promise<FastifyReply | undefined> {
    const url = request.raw.url ?? request.url;
    // A body of known, modest size is held so its digest can be signed; a larger or chunked one streams
    // through unsigned (the nonce still stops a captured request from being replayed).
    const held = await heldBody(request);
    if (held === 'too_large')
      return sendError(reply, 'payload_too_large', 'The request body is larger than it declared');
    const headers = {
      ...relayedRequestHeaders(request.headers),
      ...signProxyCall(this.key, {
        method: request.method,
        url,
        caller: { ...caller, credentialsOnAnyOrigin },
        headers: request.headers,
        bodyDigest: held === 'stream' ? undefined : proxyBodyDigest(held),
      }),
    };
    const controller = new AbortController();
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) controller.abort();
    });

    // No undici instrumentation in the gateway: this is the hop's span, and it carries the trace on.
    const span = startClientSpan(request.method, this.origin, url, headers);
    let response: Dispatcher.ResponseData;
    try {
      response = await this.pool.request({
        path: url,
        method: request.method as Dispatcher.HttpMethod,
        headers,
        body: held === 'stream' ? request.raw : (held ?? null),
        signal: controller.signal,
      });
      endClientSpan(span, response);
    } catch (error) {
      endClientSpan(span, undefined, error);
      if (controller.signal.aborted) {
        reply.hijack();
        return undefined;
      }
      this.logger.warn(`proxy service unreachable: ${(error as Error).message}`);
      return sendError(reply, 'service_unavailable', 'The proxy service is not available');
    }

    const code = response.headers[PROXY_INTERNAL_HEADERS.errorCode];
    if (typeof code === 'string' && isErrorCode(code)) {
      const body = (await response.body.json().catch(() => undefined)) as
        | { error?: { message?: string; errors?: FieldError[] } }
        | undefined;
      const retryAfter = response.headers['retry-after'];
      if (typeof retryAfter === 'string') reply.header('retry-after', retryAfter);
      return sendError(reply, code, body?.error?.message, body?.error?.errors);
    }

    reply.hijack();
    const res = reply.raw;
    // Hooks put rate-limit and CORS headers on the Fastify reply; on a clash the provider's own header wins.
    res.writeHead(response.statusCode, forwardedResponseHeaders(response.headers, reply.getHeaders()));
    await relay(response.body, res);
    return undefined;
  }
}
