import { Inject, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import { connectionsChangedSchema, VAULT_SUBJECTS, VAULT_REQUESTS } from '@switchboard/contracts';
import { listenBroadcast, NATS_CONNECTION, NatsRequester } from '@switchboard/messaging';
import { LRUCache } from 'lru-cache';
import type { NatsConnection, Subscription } from 'nats';

/** How long a found connection is trusted when no change announcement drops it first. */
const TTL_MS = 5_000;

/**
 * Whether a connection exists (the vault's answer), kept for a few seconds once found: a synchronous
 * action and every `GET /records` page need it, and asking the vault each time cost a NATS round trip
 * and a query per call (bench/README.md). Only found connections are kept, so a new one is seen at once;
 * the vault announces `vault.v1.connections.changed` on every change of an integration's connections
 * (a deletion too), and each replica drops that integration's entries on it; the TTL bounds a missed
 * announcement.
 */
@Injectable()
export class KnownConnections implements OnApplicationShutdown {
  private readonly found = new LRUCache<string, true>({ max: 50_000, ttl: TTL_MS });
  private readonly subscription: Subscription;

  constructor(
    private readonly nats: NatsRequester,
    @Inject(NATS_CONNECTION) nc: NatsConnection,
  ) {
    this.subscription = listenBroadcast(nc, VAULT_SUBJECTS.changed, connectionsChangedSchema, (change) => {
      const prefix = `${change.environmentId}\u0000${change.providerConfigKey}\u0000`;
      for (const key of this.found.keys()) if (key.startsWith(prefix)) this.found.delete(key);
    });
  }

  onApplicationShutdown(): void {
    this.subscription.unsubscribe();
  }

  async exists(environmentId: number, providerConfigKey: string, connectionId: string): Promise<boolean> {
    const key = `${environmentId}\u0000${providerConfigKey}\u0000${connectionId}`;
    if (this.found.has(key)) return true;
    const matches = await this.nats.call(VAULT_REQUESTS.match, {
      environmentId,
      providerConfigKey,
      field: 'connection_id',
      value: connectionId,
    });
    if (matches.length === 0) return false;
    this.found.set(key, true);
    return true;
  }
}

/** `KnownConnections` for the modules that check connections (actions, records). */
@Module({ providers: [KnownConnections], exports: [KnownConnections] })
export class KnownConnectionsModule {}
