import { createHash } from 'node:crypto';
import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import {
  connectionsChangedSchema,
  EVENT_SUBJECTS,
  FUNCTIONS_API_SUBJECTS,
  functionsChangedSchema,
  subscribes,
  VAULT_SUBJECTS,
  WEBHOOK_VERIFIED_HEADER,
  type AsyncActionEvent,
  type AuthEvent,
  type AuthWebhookBody,
  type ForwardWebhookBody,
  type matchedConnectionSchema,
  type ProviderWebhookEvent,
  type SyncEvent,
  type SyncWebhookEvent,
  type WebhookEventType,
  SYNC_WEBHOOK_REQUESTS,
  VAULT_REQUESTS,
} from '@switchboard/contracts';
import { listenBroadcast, NATS_CONNECTION, NatsRequester, publishEvent } from '@switchboard/messaging';
import type { NatsConnection, Subscription } from 'nats';
import {
  loadCatalog,
  type ProviderCatalog,
  type WebhookRoutingRule,
  WebhookRoutingRuleSchema,
} from '@switchboard/providers';
import type { z } from 'zod';
import { WEBHOOK_RELAY_ENV, type WebhookRelayEnv } from '../config/env';
import type { NewDelivery } from '../dispatch/deliveries.repository';
import { EnvironmentDirectory } from '@switchboard/webhook-ingress';
import { parseBody, routingLookups } from '@switchboard/webhook-ingress';
import { SettingsService, type DeliverySettings } from '../settings/settings.service';
import { serializeBody } from '../signing/webhook-signer';

type MatchedConnection = z.infer<typeof matchedConnectionSchema>;

/**
 * How long the vault's answer to "which connections have this account id" is reused: webhooks of one
 * account come in bursts. The vault announces changes to an integration's connections (created,
 * patched, deleted, metadata) and every replica drops those entries at once; this bounds the staleness
 * if an announcement is missed.
 */
const MATCH_TTL_MS = 5_000;
/** A miss is kept shorter: the connection may be about to be created. */
const MISS_TTL_MS = 1_000;
const MATCH_CACHE_MAX = 10_000;

/**
 * The `webhook-id` of one message: derived from the event (and the connection, for a forward that fans
 * out), so processing an event twice yields the same ids and the same rows.
 */
export function webhookIdFor(environmentId: number, ...parts: string[]): string {
  const digest = createHash('sha256')
    .update([String(environmentId), ...parts].join('\u0000'))
    .digest('base64url');
  return `msg_${digest.slice(0, 27)}`;
}

/**
 * Turns one stored event into the deliveries it causes: which payload (Nango's shapes), to which URLs
 * (the connection's override alone, else the environment's primary and secondary), under which toggle.
 */
@Injectable()
export class EventPlanner implements OnApplicationShutdown {
  private readonly logger = new Logger('EventPlanner');
  private readonly catalog: ProviderCatalog;
  private readonly parsedRouting = new Map<string, WebhookRoutingRule[]>();
  private readonly matches = new Map<string, { value: MatchedConnection[]; until: number }>();
  private readonly subscriptions = new Map<string, { value: string[]; until: number }>();
  /** Bumped by every functions change: an answer asked for before one is not cached (it may predate it). */
  private functionsGeneration = 0;
  private readonly subscriptionsTtlMs: number;
  /** The two broadcasts that drop cached answers (`listenBroadcast`). */
  private readonly listeners: Subscription[];

  private readonly maxJsonDepth: number;

  constructor(
    private readonly settings: SettingsService,
    private readonly environments: EnvironmentDirectory,
    private readonly nats: NatsRequester,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(WEBHOOK_RELAY_ENV) env: WebhookRelayEnv,
  ) {
    this.catalog = loadCatalog({ overridesFile: env.SWITCHBOARD_PROVIDERS_FILE });
    this.subscriptionsTtlMs = env.SWITCHBOARD_WEBHOOK_SUBSCRIPTIONS_CACHE;
    this.maxJsonDepth = env.SWITCHBOARD_JSON_MAX_DEPTH;
    this.listeners = [
      listenBroadcast(this.nc, VAULT_SUBJECTS.changed, connectionsChangedSchema, (change) =>
        this.forgetMatches(change.environmentId, change.providerConfigKey),
      ),
      listenBroadcast(this.nc, FUNCTIONS_API_SUBJECTS.changed, functionsChangedSchema, (change) => {
        const prefix = `${change.environmentId}\u0000`;
        this.functionsGeneration++;
        for (const key of this.subscriptions.keys())
          if (key.startsWith(prefix)) this.subscriptions.delete(key);
      }),
    ];
  }

  onApplicationShutdown(): void {
    for (const listener of this.listeners) listener.unsubscribe();
  }

  async planAuth(event: AuthEvent): Promise<NewDelivery[]> {
    const settings = await this.settings.forDelivery(event.environmentId, event.webhookUrlOverride !== null);
    if (!settings) return [];
    const toggle =
      event.operation === 'creation'
        ? settings.settings.on_auth_creation
        : event.operation === 'refresh'
          ? settings.settings.on_auth_refresh_error
          : true; // Nango has no toggle for overrides
    if (!toggle) return [];
    const urls = destinations(settings, event.webhookUrlOverride);
    if (urls.length === 0) return [];

    const environment = await this.environments.byEnvironmentId(event.environmentId);
    if (!environment) {
      // Deleted since the event was published: nobody is left to tell.
      this.logger.warn(
        `dropping an auth event of environment ${event.environmentId}, which no longer exists`,
      );
      return [];
    }
    const body: AuthWebhookBody = {
      from: 'nango',
      type: 'auth',
      connectionId: event.connectionId,
      providerConfigKey: event.providerConfigKey,
      authMode: this.catalog.get(event.provider)?.auth_mode ?? 'OAUTH2',
      provider: event.provider,
      environment: environment.name,
      operation: event.operation,
      success: event.success,
      ...(Object.keys(event.tags).length > 0 ? { tags: event.tags } : {}),
      ...(event.endUser
        ? {
            endUser: {
              endUserId: event.endUser.id,
              endUserEmail: event.endUser.email,
              ...(event.endUser.organization ? { organizationId: event.endUser.organization.id } : {}),
              tags: event.endUser.tags ?? {},
            },
          }
        : {}),
      ...(!event.success && event.error ? { error: event.error } : {}),
    };
    return this.deliveries(
      'auth',
      event.environmentId,
      webhookIdFor(event.environmentId, 'auth', event.id),
      urls,
      body,
      {
        connectionId: event.connectionId,
        providerConfigKey: event.providerConfigKey,
      },
    );
  }

  async planProviderWebhook(event: ProviderWebhookEvent): Promise<NewDelivery[]> {
    const raw = Buffer.from(event.body, event.bodyEncoding);
    // Too deep a body throws WebhookBodyTooDeepError: a permanent failure, dead-lettered by the consumer.
    const parsed = parseBody(raw, event.contentType ?? undefined, this.maxJsonDepth);
    const rules = this.routingRules(event.routing);
    const lookups = routingLookups(rules, { headers: event.headers, query: new URLSearchParams(), parsed });

    const matched = new Map<string, MatchedConnection>();
    for (const lookup of lookups) {
      const found = await this.match(
        event.environmentId,
        event.providerConfigKey,
        lookup.field,
        lookup.value,
      );
      for (const connection of found) matched.set(connection.connectionId, connection);
    }
    // The syncs' onWebhook handlers get the webhook whether or not it is forwarded to the customer.
    if (matched.size > 0 && (await this.syncsSubscribe(event)))
      await this.publishSyncWebhook(event, [...matched.keys()], parsed);
    if (!event.forward) return [];

    const settings = await this.settings.forDelivery(
      event.environmentId,
      [...matched.values()].some((c) => c.webhookUrlOverride),
    );
    if (!settings) return [];
    // Whether anyone could have sent this: the customer sees it on every forward (header, and body field).
    const headers = { ...event.headers, [WEBHOOK_VERIFIED_HEADER]: String(event.verified) };

    if (matched.size === 0) {
      // Nango forwards a webhook it cannot attribute as the provider's raw payload, unwrapped.
      const urls = destinations(settings, null);
      return this.deliveries(
        'forward',
        event.environmentId,
        webhookIdFor(event.environmentId, 'forward', event.id),
        urls,
        parsed ?? null,
        {
          connectionId: null,
          providerConfigKey: event.providerConfigKey,
          headers,
        },
      );
    }
    const out: NewDelivery[] = [];
    for (const connection of matched.values()) {
      const body: ForwardWebhookBody = {
        from: event.provider,
        type: 'forward',
        providerConfigKey: event.providerConfigKey,
        connectionId: connection.connectionId,
        payload: parsed ?? null,
        verified: event.verified,
      };
      const id = webhookIdFor(event.environmentId, 'forward', event.id, connection.connectionId);
      out.push(
        ...this.deliveries(
          'forward',
          event.environmentId,
          id,
          destinations(settings, connection.webhookUrlOverride),
          body,
          {
            connectionId: connection.connectionId,
            providerConfigKey: event.providerConfigKey,
            headers,
          },
        ),
      );
    }
    return out;
  }

  async planSync(event: SyncEvent): Promise<NewDelivery[]> {
    const override = await this.overrideOf(event.environmentId, event.providerConfigKey, event.connectionId);
    const settings = await this.settings.forDelivery(event.environmentId, override !== null);
    if (!settings) return [];
    const { result } = event;
    if (!result.success && !settings.settings.on_sync_error) return [];
    const r = result.success ? result.responseResults : undefined;
    if (r && r.added + r.updated + r.deleted === 0 && !settings.settings.on_sync_completion_always) return [];
    const base = {
      from: 'nango',
      type: 'sync',
      connectionId: event.connectionId,
      providerConfigKey: event.providerConfigKey,
      syncName: event.syncName,
      syncVariant: event.syncVariant,
      model: event.model,
      syncType: event.syncType,
      ...(event.checkpoints ? { checkpoints: event.checkpoints } : {}),
    };
    const body = result.success
      ? {
          ...base,
          success: true,
          modifiedAfter: result.modifiedAfter,
          queryTimeStamp: result.modifiedAfter,
          responseResults: result.responseResults,
        }
      : {
          ...base,
          success: false,
          error: result.error,
          startedAt: result.startedAt,
          failedAt: result.failedAt,
        };
    return this.deliveries(
      'sync',
      event.environmentId,
      webhookIdFor(event.environmentId, 'sync', event.id),
      destinations(settings, override),
      body,
      {
        connectionId: event.connectionId,
        providerConfigKey: event.providerConfigKey,
      },
    );
  }

  async planAsyncAction(event: AsyncActionEvent): Promise<NewDelivery[]> {
    const override = await this.overrideOf(event.environmentId, event.providerConfigKey, event.connectionId);
    const settings = await this.settings.forDelivery(event.environmentId, override !== null);
    if (!settings || !settings.settings.on_async_action_completion) return [];
    const body = {
      from: 'nango',
      type: 'async_action',
      connectionId: event.connectionId,
      providerConfigKey: event.providerConfigKey,
      payload: { id: event.actionId, statusUrl: `/action/${event.actionId}` },
    };
    return this.deliveries(
      'async_action',
      event.environmentId,
      webhookIdFor(event.environmentId, 'async_action', event.id),
      destinations(settings, override),
      body,
      { connectionId: event.connectionId, providerConfigKey: event.providerConfigKey },
    );
  }

  /**
   * Hands a routed webhook to sync-orchestrator on JetStream, before this event is acknowledged: a relay
   * killed after publishing publishes again on redelivery, and the same `Nats-Msg-Id` stores it once (the
   * orchestrator's workflow ids are derived from the event id too, so nothing runs twice either way).
   */
  private async publishSyncWebhook(
    event: ProviderWebhookEvent,
    connectionIds: string[],
    payload: unknown,
  ): Promise<void> {
    const syncWebhook: SyncWebhookEvent = {
      id: `sync-webhook-${event.id}`,
      environmentId: event.environmentId,
      provider: event.provider,
      providerConfigKey: event.providerConfigKey,
      connectionIds: connectionIds.sort(),
      subscriptionTypes: event.subscriptionTypes,
      payload: payload ?? null,
      receivedAt: event.receivedAt,
    };
    await publishEvent(this.nc, EVENT_SUBJECTS.syncWebhook, syncWebhook.id, syncWebhook);
  }

  /**
   * Whether a sync of the integration subscribes to this webhook (asked of the orchestrator, kept a few
   * seconds): most integrations have no such sync, and an event nobody reads still costs a JetStream
   * publish, a delivery and an ack. When the orchestrator cannot answer, the event is published as
   * before (its consumer decides), so nothing is lost to an outage.
   */
  private async syncsSubscribe(event: ProviderWebhookEvent): Promise<boolean> {
    const key = `${event.environmentId}\u0000${event.providerConfigKey}`;
    let cached = this.subscriptions.get(key);
    if (!cached || cached.until <= Date.now()) {
      const generation = this.functionsGeneration;
      try {
        const reply = await this.nats.call(
          SYNC_WEBHOOK_REQUESTS.subscriptions,
          { environmentId: event.environmentId, providerConfigKey: event.providerConfigKey },
          { timeoutMs: 2_000 },
        );
        cached = { value: reply.subscriptions, until: Date.now() + this.subscriptionsTtlMs };
        if (generation === this.functionsGeneration) {
          if (this.subscriptions.size >= MATCH_CACHE_MAX) this.subscriptions.clear();
          this.subscriptions.set(key, cached);
        }
      } catch (error) {
        this.logger.warn(`sync webhook subscriptions unknown, publishing: ${(error as Error).message}`);
        return true;
      }
    }
    return subscribes(cached.value, event.subscriptionTypes);
  }

  /** Parsed routing rules, memoised: every webhook of a provider carries the same few rules. */
  private routingRules(raw: Record<string, unknown>[]): WebhookRoutingRule[] {
    const key = JSON.stringify(raw);
    let rules = this.parsedRouting.get(key);
    if (!rules) {
      rules = raw.flatMap((rule) => {
        const result = WebhookRoutingRuleSchema.safeParse(rule);
        return result.success ? [result.data] : [];
      });
      if (this.parsedRouting.size > 1000) this.parsedRouting.clear();
      this.parsedRouting.set(key, rules);
    }
    return rules;
  }

  private async match(
    environmentId: number,
    providerConfigKey: string,
    field: string,
    value: string,
  ): Promise<MatchedConnection[]> {
    const key = `${environmentId}\u0000${providerConfigKey}\u0000${field}\u0000${value}`;
    const cached = this.matches.get(key);
    if (cached && cached.until > Date.now()) return cached.value;
    const found = await this.nats.call(VAULT_REQUESTS.match, {
      environmentId,
      providerConfigKey,
      field,
      value,
    });
    if (this.matches.size >= MATCH_CACHE_MAX) this.matches.clear();
    this.matches.set(key, {
      value: found,
      until: Date.now() + (found.length > 0 ? MATCH_TTL_MS : MISS_TTL_MS),
    });
    return found;
  }

  private forgetMatches(environmentId: number, providerConfigKey: string): void {
    const prefix = `${environmentId}\u0000${providerConfigKey}\u0000`;
    for (const key of this.matches.keys()) if (key.startsWith(prefix)) this.matches.delete(key);
  }

  /** A connection's `webhook_url_override`, asked of the vault (sync and action events do not carry it). */
  private async overrideOf(
    environmentId: number,
    providerConfigKey: string,
    connectionId: string,
  ): Promise<string | null> {
    const found = await this.nats.call(VAULT_REQUESTS.match, {
      environmentId,
      providerConfigKey,
      field: 'connection_id',
      value: connectionId,
    });
    return found[0]?.webhookUrlOverride ?? null;
  }

  private deliveries(
    type: WebhookEventType,
    environmentId: number,
    eventId: string,
    urls: string[],
    payload: unknown,
    meta: { connectionId: string | null; providerConfigKey: string | null; headers?: Record<string, string> },
  ): NewDelivery[] {
    const body = serializeBody(payload);
    if (urls.length === 0)
      this.logger.debug(`no webhook URL for a ${type} event of environment ${environmentId}`);
    return urls.map((url) => ({
      environmentId,
      eventId,
      type,
      url,
      connectionId: meta.connectionId,
      providerConfigKey: meta.providerConfigKey,
      body,
      headers: meta.headers ?? {},
    }));
  }
}

/** A connection's override replaces both environment URLs (so its webhooks never reach a shared endpoint). */
function destinations(settings: DeliverySettings, override: string | null): string[] {
  if (override) return [override];
  const urls = [settings.settings.primary_url, settings.settings.secondary_url].filter(
    (u): u is string => !!u,
  );
  return [...new Set(urls)];
}
