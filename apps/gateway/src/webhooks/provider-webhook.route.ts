import { isUtf8 } from 'node:buffer';
import type { IncomingHttpHeaders } from 'node:http';
import { SwitchboardError, uniqueKeySchema, type IngestReply } from '@switchboard/contracts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { AccountRateLimiter } from '../access/rate-limiter';
import type { RouteAccess } from '../access/route-access';
import { sendError } from '../http/error-reply';
import { parseParams } from '../http/validation';
import type { WebhookIngest } from './webhook-ingest';

/**
 * The body is stored on JetStream inside one NATS message (1 MiB by default), and in remote mode travels
 * to the relay in one too; this keeps room for the headers and the envelope. Larger webhooks get a 413.
 */
export const MAX_WEBHOOK_BODY_BYTES = 768 * 1024;

/** Requests per 60-second window on `/webhook/*`, per sender address and per environment. */
export interface WebhookLimits {
  perIp: number;
  perEnvironment: number;
}

export const webhookParamsSchema = z.object({
  environmentUuid: z.string().uuid(),
  providerConfigKey: uniqueKeySchema,
});
export type WebhookParams = z.infer<typeof webhookParamsSchema>;
/** The route template, as metrics and spans name it on both lanes. */
export const WEBHOOK_ROUTE = '/webhook/:environmentUuid/:providerConfigKey';

/** The rate-limit windows a webhook counts against: its sender's address, and the environment it names. */
export function webhookLimitChecks(
  ip: string,
  environmentUuid: string | undefined,
  limits: WebhookLimits,
): [string, number][] {
  const checks: [string, number][] = [[`webhook-ip:${ip}`, limits.perIp]];
  if (environmentUuid !== undefined)
    checks.push([`webhook-env:${environmentUuid.toLowerCase()}`, limits.perEnvironment]);
  return checks;
}

declare module 'fastify' {
  interface FastifyRequest {
    webhookBody?: Buffer;
  }
}

/**
 * `POST /webhook/:environmentUuid/:providerConfigKey`, the `webhook_url` of an integration. Public (a
 * provider has no API key; the ingress checks the provider's own signature), and it needs the exact bytes
 * the provider sent whatever their media type, so it lives in its own Fastify scope whose only body
 * parser keeps the raw buffer. The ingress (here or in the relay) answers with what the provider should get.
 */
export class ProviderWebhookRoute {
  constructor(
    private readonly ingress: WebhookIngest,
    private readonly limiter: AccountRateLimiter,
    readonly limits: WebhookLimits,
  ) {}

  /** Called from the gateway's configure step, after the access hook is registered. */
  register(fastify: FastifyInstance): void {
    void fastify.register(async (scope) => {
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser(
        '*',
        { parseAs: 'buffer', bodyLimit: MAX_WEBHOOK_BODY_BYTES },
        (request, body, done) => {
          // Kept beside the request rather than as its body, so generic body hooks never walk the bytes.
          request.webhookBody = body as Buffer;
          done(null, undefined);
        },
      );
      // Fastify's own errors on this route (body too large, malformed length) in the public error shape.
      scope.setErrorHandler((error: { code?: string }, _request, reply) => {
        if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
          return sendError(
            reply,
            'payload_too_large',
            `The webhook body exceeds ${MAX_WEBHOOK_BODY_BYTES} bytes`,
          );
        if (error.code?.startsWith('FST_ERR_CTP'))
          return sendError(reply, 'invalid_body', 'The request body could not be read');
        if (error instanceof SwitchboardError)
          return sendError(reply, error.code, error.message, error.errors);
        return sendError(reply, 'server_error', 'An unexpected error occurred');
      });
      // Before the body is read: a flood costs one Redis lease per slice, never a NATS message or a stored event.
      scope.addHook('onRequest', (request, reply) => this.admit(request, reply));
      const config = { access: { public: true } satisfies RouteAccess };
      scope.route({
        method: 'POST',
        url: WEBHOOK_ROUTE,
        config,
        bodyLimit: MAX_WEBHOOK_BODY_BYTES,
        handler: (request, reply) => this.handle(request, reply),
      });
    });
  }

  /**
   * Anyone can post here, so both windows are checked: the sender's address (a flood from one place,
   * whatever environment it names) and the environment in the path (a flood spread over many addresses,
   * which would otherwise fill the event stream that every environment's deliveries share).
   */
  private async admit(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    const environment = (request.params as { environmentUuid?: unknown }).environmentUuid;
    const checks = webhookLimitChecks(
      request.ip,
      typeof environment === 'string' ? environment : undefined,
      this.limits,
    );
    for (const [key, points] of checks) {
      const verdict = await this.limiter.consume(key, points);
      if (verdict.limited) {
        reply.header('Retry-After', verdict.retryAfter);
        return sendError(reply, 'too_many_request', `Rate limit exceeded; retry in ${verdict.retryAfter} s`);
      }
    }
    return undefined;
  }

  private async handle(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    try {
      const params = parseParams(webhookParamsSchema, request.params);
      const answer = await this.answer(
        params,
        request.raw.url ?? request.url,
        request.headers,
        request.webhookBody ?? Buffer.alloc(0),
      );
      reply.status(answer.status);
      if (answer.contentType) reply.type(answer.contentType);
      return reply.send(answer.body ?? undefined);
    } catch (error) {
      if (error instanceof SwitchboardError) return sendError(reply, error.code, error.message, error.errors);
      throw error;
    }
  }

  /** What the provider gets for one webhook, on either lane (this route, or the front door's direct one). */
  answer(
    params: WebhookParams,
    url: string,
    requestHeaders: IncomingHttpHeaders,
    raw: Buffer,
  ): Promise<IngestReply> {
    const headers: Record<string, string> = {};
    for (const name in requestHeaders) {
      const value = requestHeaders[name];
      if (value === undefined) continue;
      headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    const utf8 = isUtf8(raw);
    return this.ingress.ingest({
      environmentUuid: params.environmentUuid,
      providerConfigKey: params.providerConfigKey,
      url,
      headers,
      rawBody: raw,
      body: raw.toString(utf8 ? 'utf8' : 'base64'),
      bodyEncoding: utf8 ? 'utf8' : 'base64',
    });
  }
}
