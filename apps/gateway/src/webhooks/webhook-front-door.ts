import type { IncomingMessage, ServerResponse } from 'node:http';
import { Logger } from '@nestjs/common';
import { type IngestReply, SwitchboardError } from '@switchboard/contracts';
import { httpServerMetrics } from '@switchboard/service-kit';
import proxyAddr from '@fastify/proxy-addr';
import type { FastifyInstance } from 'fastify';
import type { AccountRateLimiter } from '../access/rate-limiter';
import { CORS_RESPONSE_HEADERS } from '../http/cors';
import { writeErrorResponse } from '../http/error-reply';
import { enterFrontDoor, type FrontDoor, type Listener } from '../http/gateway-server';
import {
  MAX_WEBHOOK_BODY_BYTES,
  WEBHOOK_ROUTE,
  webhookLimitChecks,
  webhookParamsSchema,
  type ProviderWebhookRoute,
  type WebhookParams,
} from './provider-webhook.route';

/** `/webhook/<uuid>/<key>` with nothing the router would have to decode or normalise, and any query. */
const PLAIN_TARGET = /^\/webhook\/([0-9A-Fa-f-]{36})\/([A-Za-z0-9_.~-]+)(?:\?|$)/;

/** The gateway's `trustProxy` setting (SWITCHBOARD_TRUST_PROXY), as Fastify is given it. */
export type TrustProxy = false | number | string[];

/**
 * Where provider webhooks enter the gateway, ahead of Fastify and of the HTTP instrumentation
 * (`gatewayServerFactory`), as `/proxy` calls do: a provider posting at hundreds of events per second paid
 * more for Fastify's request, hooks and reply and for the instrumentation's span than for verifying and
 * storing the webhook. A plain POST — a target the router would take as it is, a `Content-Length` within
 * the limit, a media type, and room left in this replica's slices of both rate-limit windows — is read and
 * given to the same ingress here. Anything else (a chunked or oversized body, a window to lease from Redis or
 * refuse, a target to normalise, the server closing) is handed to Fastify unchanged, inside the span, where
 * the webhook route answers it. Both lanes give the same answer (e2e: webhook-front-door).
 */
export class WebhookFrontDoor implements FrontDoor {
  private readonly logger = new Logger('WebhookFrontDoor');
  private readonly trusted: ((address: string, hop: number) => boolean) | undefined;
  private closing = false;

  constructor(
    private readonly route: ProviderWebhookRoute,
    private readonly limiter: AccountRateLimiter,
    trustProxy: TrustProxy,
    fastify: FastifyInstance,
  ) {
    // The client address exactly as Fastify's `request.ip` computes it under the same setting.
    this.trusted =
      trustProxy === false
        ? undefined
        : typeof trustProxy === 'number'
          ? (_address, hop) => hop < trustProxy
          : proxyAddr.compile(trustProxy);
    fastify.addHook('preClose', (done) => {
      this.closing = true;
      done();
    });
  }

  takes(req: IncomingMessage): boolean {
    return req.url !== undefined && req.url.startsWith('/webhook/');
  }

  handle(req: IncomingMessage, res: ServerResponse, next: Listener): void {
    enterFrontDoor(req, res, next, {
      route: WEBHOOK_ROUTE,
      laneAttribute: 'switchboard.webhook.lane',
      admit: (r) => this.admit(r),
      serve: (params) => this.serve(req, res, params, performance.now()),
    });
  }

  /** The webhook's parameters when the direct lane may serve it; undefined hands it to Fastify. */
  private admit(req: IncomingMessage): WebhookParams | undefined {
    if (this.closing || req.method !== 'POST') return undefined;
    const match = PLAIN_TARGET.exec(req.url!);
    if (!match) return undefined;
    const parsed = webhookParamsSchema.safeParse({ environmentUuid: match[1], providerConfigKey: match[2] });
    if (!parsed.success) return undefined;
    const length = req.headers['content-length'];
    if (
      req.headers['transfer-encoding'] !== undefined ||
      req.headers['content-type'] === undefined ||
      length === undefined ||
      !/^[1-9]\d{0,8}$/.test(length) ||
      Number(length) > MAX_WEBHOOK_BODY_BYTES
    )
      return undefined;
    const ip = this.clientIp(req);
    if (ip === undefined) return undefined;
    const checks = webhookLimitChecks(ip, parsed.data.environmentUuid, this.route.limits);
    return this.limiter.consumeLocalAll(checks) ? parsed.data : undefined;
  }

  private clientIp(req: IncomingMessage): string | undefined {
    return this.trusted ? proxyAddr(req, this.trusted) : req.socket.remoteAddress;
  }

  private serve(req: IncomingMessage, res: ServerResponse, params: WebhookParams, start: number): void {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('error', () => res.destroy());
    req.once('end', () => {
      const raw = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      this.route.answer(params, req.url!, req.headers, raw).then(
        (answer) => this.finish(req, res, start, () => writeAnswer(res, answer)),
        (error: unknown) => this.finish(req, res, start, () => this.writeFailure(res, error)),
      );
    });
  }

  private finish(req: IncomingMessage, res: ServerResponse, start: number, write: () => void): void {
    try {
      write();
    } catch {
      res.destroy();
    }
    httpServerMetrics.record(req.method!, WEBHOOK_ROUTE, res.statusCode, (performance.now() - start) / 1000);
  }

  /** As the route's error handler answers on the Fastify lane. */
  private writeFailure(res: ServerResponse, error: unknown): void {
    if (!(error instanceof SwitchboardError)) {
      this.logger.error(`a provider webhook failed: ${(error as Error)?.message ?? String(error)}`);
    }
    writeErrorResponse(
      res,
      error instanceof SwitchboardError
        ? error
        : new SwitchboardError('server_error', 'An unexpected error occurred'),
      CORS_RESPONSE_HEADERS,
    );
  }
}

/** The ingress's answer, with the headers Fastify and the CORS hook give it on the other lane. */
function writeAnswer(res: ServerResponse, answer: IngestReply): void {
  const headers: Record<string, string | number> = { ...CORS_RESPONSE_HEADERS };
  if (answer.body === null) {
    // Fastify's empty answer: no body headers on a 204, a zero length otherwise.
    if (answer.status !== 204) headers['content-length'] = 0;
    res.writeHead(answer.status, headers);
    res.end();
    return;
  }
  headers['content-type'] = contentTypeAsFastify(answer.contentType);
  headers['content-length'] = Buffer.byteLength(answer.body);
  res.writeHead(answer.status, headers);
  res.end(answer.body);
}

/** The media type Fastify's `reply.type(…).send(string)` writes: a default, and utf-8 named for JSON. */
function contentTypeAsFastify(contentType: string | null): string {
  if (!contentType) return 'text/plain; charset=utf-8';
  if (contentType.includes('json') && !/charset=/i.test(contentType))
    return `${contentType.trim().replace(/;\s*$/, '')}; charset=utf-8`;
  return contentType;
}
