import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { FUNCTIONS_API_SUBJECTS, functionsChangedSchema, type Caller } from '@switchboard/contracts';
import type { OrchestratorDb } from '@switchboard/db';
import { listenBroadcast, NATS_CONNECTION } from '@switchboard/messaging';
import { LRUCache } from 'lru-cache';
import type { NatsConnection, Subscription } from 'nats';
import { ORCHESTRATOR_DB } from '../database/database.module';
import { storedConfig, WITH_VERSION, type FunctionWithVersion } from './function-config';
import { IntegrationDirectory } from './integration-directory';

/** How long an answer is trusted when no change announcement drops it first. */
const TTL_MS = 5_000;

/**
 * The deployed functions (with their current version), the integrations' providers and the syncs that
 * take each provider's webhooks: what a synchronous action, an on-event script or a webhook needs before
 * it runs, kept for a few seconds so a trigger costs no NATS look-up and no query on the hot path
 * (bench/README.md, "Why the current settings"). The provider is auth-connect's; the connection's
 * existence is `KnownConnections`'. Only found answers are kept, so a just-created integration or function is seen
 * at once. Changes drop what they touch: a deploy or delete on any replica announces
 * `orchestrator.v1.functions.changed` (this replica drops its entries before answering the deploy); the
 * TTL bounds a missed announcement.
 */
@Injectable()
export class DeployedFunctionsCache implements OnApplicationShutdown {
  private readonly functions = new LRUCache<string, FunctionWithVersion>({ max: 10_000, ttl: TTL_MS });
  private readonly providers = new LRUCache<string, string>({ max: 10_000, ttl: TTL_MS });
  private readonly webhookSyncs = new LRUCache<string, WebhookSync[]>({ max: 10_000, ttl: TTL_MS });
  private readonly subscription: Subscription;

  constructor(
    @Inject(ORCHESTRATOR_DB) private readonly db: OrchestratorDb,
    private readonly integrations: IntegrationDirectory,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
  ) {
    this.subscription = listenBroadcast(
      nc,
      FUNCTIONS_API_SUBJECTS.changed,
      functionsChangedSchema,
      (change) => this.dropEnvironment(change.environmentId),
    );
  }

  onApplicationShutdown(): void {
    this.subscription.unsubscribe();
  }

  /** The deployed action with its current version, or null. */
  async action(environmentId: number, providerConfigKey: string, name: string) {
    const key = `${environmentId}\u0000${providerConfigKey}\u0000${name}`;
    const cached = this.functions.get(key);
    if (cached) return cached;
    const found = await this.db.deployedFunction.findUnique({
      where: {
        environmentId_providerConfigKey_type_name: { environmentId, providerConfigKey, type: 'action', name },
      },
      include: WITH_VERSION,
    });
    if (found?.currentVersion) this.functions.set(key, found);
    return found;
  }

  async providerOf(caller: Caller, providerConfigKey: string): Promise<string | undefined> {
    const key = `${caller.environmentId}\u0000${providerConfigKey}`;
    const cached = this.providers.get(key);
    if (cached) return cached;
    const provider = await this.integrations.providerOf(caller, providerConfigKey);
    if (provider) this.providers.set(key, provider);
    return provider;
  }

  /**
   * The enabled syncs of an integration that subscribe to provider webhooks, with their subscriptions:
   * every routed provider webhook asks (`events.v1.sync-webhook`), and most integrations have none, so
   * the answer is kept, an empty one too. A deploy or delete drops it like the actions'.
   */
  async webhookSyncsOf(environmentId: number, providerConfigKey: string): Promise<WebhookSync[]> {
    const key = `${environmentId}\u0000${providerConfigKey}`;
    const cached = this.webhookSyncs.get(key);
    if (cached) return cached;
    const functions = await this.db.deployedFunction.findMany({
      where: { environmentId, providerConfigKey, type: 'sync', enabled: true },
      include: WITH_VERSION,
    });
    const syncs = functions
      .filter((fn) => fn.currentVersion)
      .map((fn) => ({ name: fn.name, subscriptions: storedConfig(fn).webhookSubscriptions ?? [] }))
      .filter((s) => s.subscriptions.length > 0);
    this.webhookSyncs.set(key, syncs);
    return syncs;
  }

  /**
   * Functions of an environment were deployed, deleted or had their integration removed: drops this
   * replica's entries now and tells the others.
   */
  functionsChanged(environmentId: number): void {
    this.dropEnvironment(environmentId);
    this.nc.publish(FUNCTIONS_API_SUBJECTS.changed, JSON.stringify({ environmentId }));
  }

  private dropEnvironment(environmentId: number): void {
    const prefix = `${environmentId}\u0000`;
    for (const key of this.functions.keys()) if (key.startsWith(prefix)) this.functions.delete(key);
    for (const key of this.providers.keys()) if (key.startsWith(prefix)) this.providers.delete(key);
    for (const key of this.webhookSyncs.keys()) if (key.startsWith(prefix)) this.webhookSyncs.delete(key);
  }
}

/** A sync that handles provider webhooks: its name and `webhookSubscriptions`. */
export interface WebhookSync {
  name: string;
  subscriptions: string[];
}
