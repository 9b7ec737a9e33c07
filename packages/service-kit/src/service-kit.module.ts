import { Global, Inject, Module, type DynamicModule, type OnModuleInit } from '@nestjs/common';
import type { ServiceName } from '@switchboard/contracts';
import { MessagingModule, NATS_CONNECTION, type NatsSettings } from '@switchboard/messaging';
import type { NatsConnection } from 'nats';
import {
  createHealthHandler,
  HealthController,
  READINESS_DETAILS,
  SERVICE_IDENTITY,
} from './health.controller';
import { HealthRegistry } from './health.registry';

export interface ServiceKitOptions {
  name: ServiceName;
  /** The server and this service's own NATS user (its `envFragments.nats` values). */
  nats: NatsSettings;
  version?: string;
  requestTimeoutMs?: number;
  /**
   * Who sees the checks of `GET /ready` (names, versions, what is failing): `everyone` (a service's own
   * port, reached only from inside) or `authenticated` (a public edge: an anonymous caller gets the status
   * alone; the edge's access layer marks a request with a valid key, see READINESS_VIEWER).
   */
  readinessDetails?: 'everyone' | 'authenticated';
}

class NatsHealthCheck implements OnModuleInit {
  constructor(
    private readonly registry: HealthRegistry,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
  ) {}
  onModuleInit(): void {
    this.registry.register({
      name: 'nats',
      check: async () => {
        if (this.nc.isClosed()) return { ok: false, detail: 'connection closed' };
        // A round trip to the server, bounded by the registry's timeout.
        await this.nc.flush();
        return { ok: true };
      },
    });
  }
}

/** Messaging, health endpoints and the NATS health subject every service has. */
@Global()
@Module({})
export class ServiceKitModule {
  static forRoot(options: ServiceKitOptions): DynamicModule {
    return {
      module: ServiceKitModule,
      imports: [
        MessagingModule.forRoot({
          nats: options.nats,
          clientName: options.name,
          requestTimeoutMs: options.requestTimeoutMs,
        }),
      ],
      controllers: [HealthController, createHealthHandler(options.name)],
      providers: [
        HealthRegistry,
        NatsHealthCheck,
        { provide: READINESS_DETAILS, useValue: options.readinessDetails ?? 'everyone' },
        {
          provide: SERVICE_IDENTITY,
          useValue: { name: options.name, version: options.version ?? '0.1.0', startedAt: Date.now() },
        },
      ],
      exports: [HealthRegistry, SERVICE_IDENTITY],
    };
  }
}
