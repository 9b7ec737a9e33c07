import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import {
  connectionsChangedSchema,
  VAULT_SUBJECTS,
  type ConnectionCredentials,
  type ResolvedIntegration,
  AUTH_INTERNAL_REQUESTS,
  VAULT_REQUESTS,
} from '@switchboard/contracts';
import { listenBroadcast, NATS_CONNECTION, NatsRequester } from '@switchboard/messaging';
import type { NatsConnection, Subscription } from 'nats';
import { LRUCache } from 'lru-cache';
import { PROXY_ENGINE_ENV, type ProxyEngineEnv } from './proxy-engine.env';

/** Never trust cached credentials this close to their expiry: the vault must get the chance to refresh. */
const EXPIRY_MARGIN_MS = 60_000;

/**
 * The integration (with its provider definition and client secret, from auth-connect) and the
 * connection's credentials (from the vault, which refreshes them when they expire soon). Both are kept
 * for a few seconds so the hot path costs no NATS round trip. The vault announces changes to an
 * integration's connections (deleted, re-authorized, imported) and this replica drops their credentials at
 * once; the TTL bounds the rest (a missed announcement, a rotated integration secret). Concurrent misses
 * share one request.
 */
@Injectable()
export class ConnectionResolver implements OnApplicationShutdown {
  private readonly integrations: LRUCache<string, ResolvedIntegration> | undefined;
  private readonly credentials: LRUCache<string, ConnectionCredentials> | undefined;
  private readonly inFlight = new Map<string, Promise<unknown>>();
  /** Cached credential keys per integration, so an announced change drops them without scanning the cache. */
  private readonly keysByIntegration = new Map<string, Set<string>>();
  /** Announcements received so far: a vault answer that overlapped one is not cached. */
  private changes = 0;
  /** The vault's `connections.changed` broadcast, heard while credentials are cached. */
  private readonly listener: Subscription | undefined;

  constructor(
    private readonly nats: NatsRequester,
    @Inject(NATS_CONNECTION) nc: NatsConnection,
    @Inject(PROXY_ENGINE_ENV) env: ProxyEngineEnv,
  ) {
    const ttl = env.SWITCHBOARD_PROXY_CREDENTIALS_TTL_MS;
    // Ages read to 100 ms (lru-cache's default, 1 ms, arms a timer for nearly every busy millisecond).
    this.integrations = ttl > 0 ? new LRUCache({ max: 10_000, ttl, ttlResolution: 100 }) : undefined;
    this.credentials =
      ttl > 0
        ? new LRUCache({ max: 50_000, ttl, ttlResolution: 100, dispose: (_value, key) => this.unindex(key) })
        : undefined;
    if (this.credentials) {
      this.listener = listenBroadcast(nc, VAULT_SUBJECTS.changed, connectionsChangedSchema, (change) =>
        this.forget(change.environmentId, change.providerConfigKey),
      );
    }
  }

  onApplicationShutdown(): void {
    this.listener?.unsubscribe();
  }

  private forget(environmentId: number, providerConfigKey: string): void {
    this.changes++;
    const keys = this.keysByIntegration.get(integrationOf(environmentId, providerConfigKey));
    if (keys) for (const key of [...keys]) this.credentials!.delete(key);
  }

  private index(key: string): void {
    const group = integrationOfKey(key);
    let keys = this.keysByIntegration.get(group);
    if (!keys) this.keysByIntegration.set(group, (keys = new Set()));
    keys.add(key);
  }

  private unindex(key: string): void {
    const group = integrationOfKey(key);
    const keys = this.keysByIntegration.get(group);
    if (keys?.delete(key) && keys.size === 0) this.keysByIntegration.delete(group);
  }

  /** The integration if this replica holds it, without a round trip. */
  cachedIntegration(environmentId: number, uniqueKey: string): ResolvedIntegration | undefined {
    return this.integrations?.get(`${environmentId}\u0000${uniqueKey}`);
  }

  /** The connection's credentials if this replica holds them, without a round trip. */
  cachedConnection(
    environmentId: number,
    providerConfigKey: string,
    connectionId: string,
  ): ConnectionCredentials | undefined {
    return this.credentials?.get(`${integrationOf(environmentId, providerConfigKey)}${connectionId}`);
  }

  integration(environmentId: number, uniqueKey: string): Promise<ResolvedIntegration> {
    const key = `${environmentId}\u0000${uniqueKey}`;
    const cached = this.integrations?.get(key);
    if (cached) return Promise.resolve(cached);
    return this.once(`i\u0000${key}`, async () => {
      const integration = await this.nats.call(AUTH_INTERNAL_REQUESTS.resolveIntegration, {
        environmentId,
        uniqueKey,
      });
      this.integrations?.set(key, integration);
      return integration;
    });
  }

  connection(
    environmentId: number,
    providerConfigKey: string,
    connectionId: string,
    forceRefresh = false,
  ): Promise<ConnectionCredentials> {
    const key = `${integrationOf(environmentId, providerConfigKey)}${connectionId}`;
    if (!forceRefresh) {
      const cached = this.credentials?.get(key);
      if (cached) return Promise.resolve(cached);
    } else {
      this.credentials?.delete(key);
    }
    return this.once(`c\u0000${forceRefresh ? 'f' : ''}\u0000${key}`, async () => {
      const changesBefore = this.changes;
      const connection = await this.nats.call(VAULT_REQUESTS.credentials, {
        environmentId,
        providerConfigKey,
        connectionId,
        forceRefresh,
      });
      const cache = this.credentials;
      const ttl = cacheTtl(connection);
      // An answer that may predate a change announced meanwhile is used once, not kept.
      if (cache && ttl > 0 && this.changes === changesBefore) {
        cache.set(key, connection, { ttl: Math.min(ttl, cache.ttl) });
        this.index(key);
      }
      return connection;
    });
  }

  private once<T>(key: string, load: () => Promise<T>): Promise<T> {
    let pending = this.inFlight.get(key) as Promise<T> | undefined;
    if (!pending) {
      pending = load().finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, pending);
    }
    return pending;
  }
}

/** The prefix of the credential keys of one integration: `${environmentId}\0${providerConfigKey}\0`. */
function integrationOf(environmentId: number, providerConfigKey: string): string {
  return `${environmentId}\u0000${providerConfigKey}\u0000`;
}

/** The integration prefix of a credential key (a connection id never holds NUL: no header can carry one, and the gateway refuses it elsewhere). */
function integrationOfKey(key: string): string {
  return key.slice(0, key.lastIndexOf('\u0000') + 1);
}

function cacheTtl(connection: ConnectionCredentials): number {
  const expiresAt = (connection.credentials as { expires_at?: unknown }).expires_at;
  if (expiresAt === undefined || expiresAt === null) return Number.POSITIVE_INFINITY;
  const at = typeof expiresAt === 'number' ? expiresAt : Date.parse(String(expiresAt));
  if (Number.isNaN(at)) return Number.POSITIVE_INFINITY;
  return at - Date.now() - EXPIRY_MARGIN_MS;
}
