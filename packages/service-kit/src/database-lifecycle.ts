import {
  Inject,
  Injectable,
  type OnApplicationShutdown,
  type OnModuleInit,
  type Provider,
} from '@nestjs/common';
import { databaseHealthCheck, HealthRegistry } from './health.registry';

/** What the lifecycle needs of a database client; Prisma clients have both. */
export interface ManagedDatabase {
  $queryRawUnsafe(query: string): Promise<unknown>;
  $disconnect(): Promise<void>;
}

/**
 * A provider that registers the readiness check of the database client bound to `token` and closes
 * its pool when the service shuts down. Each service with tables adds it next to its client.
 */
export function databaseLifecycle(token: symbol): Provider {
  @Injectable()
  class DatabaseLifecycle implements OnModuleInit, OnApplicationShutdown {
    constructor(
      @Inject(token) readonly db: ManagedDatabase,
      readonly health: HealthRegistry,
    ) {}

    onModuleInit(): void {
      this.health.register(databaseHealthCheck(() => this.db.$queryRawUnsafe('SELECT 1')));
    }

    async onApplicationShutdown(): Promise<void> {
      await this.db.$disconnect();
    }
  }
  return DatabaseLifecycle;
}
