import { Global, Inject, Module, type DynamicModule, type OnApplicationShutdown } from '@nestjs/common';
import type { NatsConnection } from 'nats';
import { connectNats, type NatsSettings } from './nats-connection';
import { NatsRequester } from './nats-requester';

export const NATS_CONNECTION = Symbol('NATS_CONNECTION');

export interface MessagingModuleOptions {
  /** The server and this process's own NATS user. */
  nats: NatsSettings;
  /** Shown in NATS monitoring as the client name. */
  clientName: string;
  requestTimeoutMs?: number;
}

class NatsConnectionCloser implements OnApplicationShutdown {
  constructor(@Inject(NATS_CONNECTION) private readonly nc: NatsConnection) {}
  async onApplicationShutdown(): Promise<void> {
    if (!this.nc.isClosed()) await this.nc.drain().catch(() => undefined);
  }
}

/** Provides one NATS connection per process and the typed requester built on it. */
@Global()
@Module({})
export class MessagingModule {
  static forRoot(options: MessagingModuleOptions): DynamicModule {
    return {
      module: MessagingModule,
      providers: [
        {
          provide: NATS_CONNECTION,
          useFactory: () => connectNats(options.nats, options.clientName),
        },
        {
          provide: NatsRequester,
          inject: [NATS_CONNECTION],
          useFactory: (nc: NatsConnection) => new NatsRequester(nc, options.requestTimeoutMs),
        },
        NatsConnectionCloser,
      ],
      exports: [NATS_CONNECTION, NatsRequester],
    };
  }
}
