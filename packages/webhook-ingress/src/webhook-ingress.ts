import { createHash, randomUUID } from 'node:crypto';
import {
  DEFAULT_JSON_MAX_DEPTH,
  EVENT_SUBJECTS,
  jsonDepthExceeds,
  SwitchboardError,
  type IngestReply,
  type IngestRequest,
  type ProviderWebhookEvent,
  type ResolvedIntegration,
  type WebhookRefusal,
  AUTH_INTERNAL_REQUESTS,
} from '@switchboard/contracts';
import { publishEvent, type NatsRequester } from '@switchboard/messaging';
import { WebhookSchema, type WebhookDefinition } from '@switchboard/providers';
import type { NatsConnection } from 'nats';
import type { EnvironmentDirectory } from './environment-directory';
import {
  findHandshake,
  handshakeReply,
  parseBody,
  subscriptionTypesOf,
  valuesAt,
  verificationKeyOf,
  verifyWebhook,
  WebhookBodyTooDeepError,
  type WebhookRequest,
} from './provider-webhook';

/** Integrations (with their decrypted webhook secret) are kept this long: a provider may send bursts. */
const INTEGRATION_TTL_MS = 5_000;

/**
 * Not forwarded to the customer: hop-by-hop and transport headers, credentials and cookies, and the
 * headers our own signatures use (a provider signing with Standard Webhooks must not collide with ours).
 */
const NOT_FORWARDED = new Set([
  'host',
  'authorization',
  'connection',
  'keep-alive',
  'content-length',
  'content-type',
  'content-encoding',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'expect',
  'cookie',
  'set-cookie',
  'referer',
  'user-agent',
  'www-authenticate',
  'server',
  'forwarded',
  'via',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
]);
// `x-switchboard-`: ours (the verified marker), so a sender cannot set them.
const NOT_FORWARDED_PREFIXES = ['sec-', 'proxy-', 'x-forwarded-', 'x-nango-', 'x-real-ip', 'x-switchboard-'];

export function forwardableHeaders(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers).filter(
      ([name]) =>
        !NOT_FORWARDED.has(name) && !NOT_FORWARDED_PREFIXES.some((prefix) => name.startsWith(prefix)),
    ),
  );
}

/** The ingress's coded errors (the gateway answers them in the public error shape). */
export class WebhookIngressError extends SwitchboardError {}

/** One received webhook: an {@link IngestRequest} plus its bytes, decoded once by whoever received it. */
export interface IngressInput extends IngestRequest {
  rawBody: Buffer;
}

/** The input of a webhook that came over NATS (remote mode): its bytes decoded from the envelope. */
export function ingressInputOf(request: IngestRequest): IngressInput {
  return { ...request, rawBody: Buffer.from(request.body, request.bodyEncoding) };
}

export interface WebhookIngressDeps {
  environments: Pick<EnvironmentDirectory, 'byEnvironmentUuid'>;
  nats: NatsRequester;
  /** Publishes to the event stream (the provider's 2xx waits for the JetStream ack). */
  nc: NatsConnection;
  /** The public base URL (some providers sign the URL they called). */
  serverUrl: string;
  logger: { warn(message: string): void; error(message: string): void };
  /**
   * A webhook whose signature did not verify (or, `kind: 'dead_lettered'`, one that verified but nests too
   * deep to be delivered), for the delivery log. The relay writes it; the gateway sends
   * it to the relay. The refusal stands whether or not this succeeds (it must not throw).
   */
  recordRefusal(refusal: WebhookRefusal): Promise<void>;
  /** How deeply a JSON body may nest to be parsed here (`SWITCHBOARD_JSON_MAX_DEPTH`). */
  maxJsonDepth?: number;
}

const SUCCESS: IngestReply = { status: 200, contentType: 'application/json', body: '{"status":"success"}' };

/**
 * `POST /webhook/:environmentUuid/:providerConfigKey`: verify the provider's signature on the raw bytes
 * (as the catalog says), answer a handshake, and store the webhook durably on JetStream before the
 * provider gets its 2xx. Routing and forwarding happen after, in the relay, from the stored event.
 * Runs in the gateway (embedded, the default) or in the relay behind a NATS request (remote).
 */
export class WebhookIngress {
  private readonly integrations = new Map<
    string,
    { value: ResolvedIntegration; definition: WebhookDefinition | undefined; until: number }
  >();
  private readonly baseUrl: string;

  constructor(private readonly deps: WebhookIngressDeps) {
    this.baseUrl = deps.serverUrl.replace(/\/$/, '');
  }

  async ingest(request: IngressInput): Promise<IngestReply> {
    const environment = await this.deps.environments.byEnvironmentUuid(request.environmentUuid);
    if (!environment) throw new WebhookIngressError('unknown_environment', 'No environment has this UUID');
    const { value: integration, definition } = await this.integration(
      environment.id,
      request.providerConfigKey,
    );

    const rawBody = request.rawBody;
    // Nothing to verify, store or forward: providers probe endpoints like this.
    if (rawBody.length === 0) return { status: 204, contentType: null, body: null };

    const { webhook, tooDeep: bodyTooDeep } = this.webhookRequest(request);
    let tooDeep = bodyTooDeep;

    const handshake = tooDeep ? undefined : findHandshake(definition, webhook);
    const recipe = definition?.signature;
    const secret = recipe ? verificationKeyOf(recipe, integration) : null;
    let verified = false;
    // A JWT-signed webhook is its claims once verified: they are what is routed, stored and forwarded.
    let claims: Record<string, unknown> | undefined;
    if (recipe && secret && (!handshake || handshake.verify_signature)) {
      const verdict = await verifyWebhook(recipe, webhook, secret);
      if (!verdict.ok) {
        this.deps.logger.warn(
          `refused a ${integration.provider} webhook for ${request.providerConfigKey}: ${verdict.reason}`,
        );
        await this.deps.recordRefusal({
          environmentId: environment.id,
          provider: integration.provider,
          providerConfigKey: request.providerConfigKey,
          reason: verdict.reason,
          receivedAt: new Date().toISOString(),
        });
        throw new WebhookIngressError('invalid_signature', 'The webhook signature is invalid');
      }
      verified = true;
      claims = verdict.claims;
    }
    // With a secret to check against, only what verified goes on (a handshake the catalog does not sign is
    // answered, never forwarded). Without one, it goes on marked `verified: false`.
    const checkable = Boolean(recipe && secret);

    let stored = request;
    if (claims) {
      const json = JSON.stringify(claims);
      const maxDepth = this.deps.maxJsonDepth ?? DEFAULT_JSON_MAX_DEPTH;
      // The token's claims were never a body parseBody could bound: bound them here.
      if (!tooDeep && jsonDepthExceeds(json, maxDepth)) tooDeep = new WebhookBodyTooDeepError(maxDepth);
      webhook.parsed = claims;
      stored = {
        ...request,
        headers: { ...request.headers, 'content-type': 'application/json' },
        body: json,
        bodyEncoding: 'utf8',
        rawBody: Buffer.from(json, 'utf8'),
      };
    }
    if (tooDeep) {
      await this.deadLetter(environment.id, integration, request.providerConfigKey, tooDeep);
      return SUCCESS;
    }

    if (handshake) {
      if (handshake.forward && (verified || !checkable))
        await this.store(environment.id, integration, stored, webhook, definition, verified, []);
      const reply = handshakeReply(handshake, webhook);
      return { status: reply.status, contentType: reply.contentType, body: reply.body };
    }
    await this.store(
      environment.id,
      integration,
      stored,
      webhook,
      definition,
      verified,
      definition?.routing ?? [],
    );
    return SUCCESS;
  }

  /** The webhook as the signature recipes read it, its body parsed (and whether it nests too deeply). */
  private webhookRequest(request: IngressInput): {
    webhook: WebhookRequest;
    tooDeep: WebhookBodyTooDeepError | undefined;
  } {
    const url = new URL(request.url, 'http://placeholder');
    const webhook: WebhookRequest = {
      rawBody: request.rawBody,
      headers: request.headers,
      query: url.searchParams,
      method: 'POST',
      url: `${this.baseUrl}${url.pathname}${url.search}`,
      parsed: undefined,
    };
    let tooDeep: WebhookBodyTooDeepError | undefined;
    try {
      webhook.parsed = parseBody(request.rawBody, request.headers['content-type'], this.deps.maxJsonDepth);
    } catch (error) {
      if (!(error instanceof WebhookBodyTooDeepError)) throw error;
      tooDeep = error;
      // Parsed anyway, only for the signature's values: JSON.parse does not recurse, and values are only
      // read at their paths here. Nothing walks it whole, answers with it (no handshake) or stores it.
      webhook.parsed = parseBody(request.rawBody, request.headers['content-type'], Infinity);
    }
    return { webhook, tooDeep };
  }

  /**
   * Never deliverable: every walk of it after (routing, the forward's serialisation) would overflow the
   * stack. Dead-lettered in the delivery log, not stored; the provider gets its 200, since sending the
   * same bytes again cannot help (and a provider retrying a 4xx for days may disable the subscription).
   */
  private async deadLetter(
    environmentId: number,
    integration: ResolvedIntegration,
    providerConfigKey: string,
    tooDeep: WebhookBodyTooDeepError,
  ): Promise<void> {
    this.deps.logger.warn(
      `dead-lettered a ${integration.provider} webhook for ${providerConfigKey}: ${tooDeep.message}`,
    );
    await this.deps.recordRefusal({
      kind: 'dead_lettered',
      environmentId,
      provider: integration.provider,
      providerConfigKey,
      reason: tooDeep.message,
      receivedAt: new Date().toISOString(),
    });
  }

  private async store(
    environmentId: number,
    integration: ResolvedIntegration,
    request: IngressInput,
    webhook: WebhookRequest,
    definition: WebhookDefinition | undefined,
    verified: boolean,
    routing: NonNullable<WebhookDefinition['routing']>,
  ): Promise<void> {
    // A provider retrying a delivery it already made sends the same delivery id: JetStream stores it once.
    const deliveryId = definition?.delivery_id ? valuesAt(definition.delivery_id, webhook)[0] : undefined;
    const id = deliveryId
      ? `pw_${createHash('sha256').update(`${environmentId}\u0000${request.providerConfigKey}\u0000${deliveryId}`).digest('hex').slice(0, 40)}`
      : `pw_${randomUUID()}`;
    const event: ProviderWebhookEvent = {
      id,
      environmentId,
      providerConfigKey: request.providerConfigKey,
      provider: integration.provider,
      receivedAt: new Date().toISOString(),
      forward: integration.forwardWebhooks,
      verified,
      contentType: request.headers['content-type'] ?? null,
      headers: forwardableHeaders(request.headers),
      body: request.body,
      bodyEncoding: request.bodyEncoding,
      routing: routing as Record<string, unknown>[],
      subscriptionTypes: subscriptionTypesOf(definition, webhook),
    };
    try {
      await publishEvent(this.deps.nc, EVENT_SUBJECTS.providerWebhook, id, event);
    } catch (error) {
      // The provider must not get a 2xx for a webhook we did not store; it will retry.
      this.deps.logger.error(`could not store a provider webhook: ${(error as Error).message}`);
      throw new WebhookIngressError('service_unavailable', 'The webhook could not be stored; retry later');
    }
  }

  private definitionOf(integration: ResolvedIntegration): WebhookDefinition | undefined {
    const raw = (integration.providerDefinition as { webhook?: unknown }).webhook;
    if (raw === undefined) return undefined;
    const parsed = WebhookSchema.safeParse(raw);
    if (!parsed.success) {
      this.deps.logger.error(
        `provider ${integration.provider} has an invalid webhook section; treating it as absent`,
      );
      return undefined;
    }
    return parsed.data;
  }

  /** The integration and its parsed `webhook` section, kept together for a few seconds. */
  private async integration(
    environmentId: number,
    uniqueKey: string,
  ): Promise<{ value: ResolvedIntegration; definition: WebhookDefinition | undefined }> {
    const key = `${environmentId}\u0000${uniqueKey}`;
    const cached = this.integrations.get(key);
    if (cached && cached.until > Date.now()) return cached;
    try {
      const value = await this.deps.nats.call(AUTH_INTERNAL_REQUESTS.resolveIntegration, {
        environmentId,
        uniqueKey,
      });
      const entry = { value, definition: this.definitionOf(value), until: Date.now() + INTEGRATION_TTL_MS };
      this.integrations.set(key, entry);
      return entry;
    } catch (error) {
      if (
        error instanceof SwitchboardError &&
        ['unknown_provider_config', 'not_found'].includes(error.code)
      ) {
        throw new WebhookIngressError(
          'unknown_provider_config',
          `No integration "${uniqueKey}" in this environment`,
        );
      }
      throw error;
    }
  }
}
