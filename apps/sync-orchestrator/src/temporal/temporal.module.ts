import {
  Global,
  Inject,
  Injectable,
  Module,
  type OnApplicationShutdown,
  type OnModuleInit,
} from '@nestjs/common';
import { HealthRegistry } from '@switchboard/service-kit';
import { Client, Connection, type ConnectionOptions } from '@temporalio/client';
import { ORCHESTRATOR_ENV, type OrchestratorEnv } from '../config/env';
import { TemporalHealthCheck } from './temporal.health';
import { clientInterceptors } from './tracing';

/** One place for how this service dials Temporal (TLS and API keys would go here), shared with the probe. */
const connectionOptions = (env: OrchestratorEnv): ConnectionOptions => ({ address: env.TEMPORAL_ADDRESS });

@Injectable()
class TemporalLifecycle implements OnModuleInit, OnApplicationShutdown {
  private readonly probe: TemporalHealthCheck;
  constructor(
    private readonly connection: Connection,
    private readonly health: HealthRegistry,
    @Inject(ORCHESTRATOR_ENV) env: OrchestratorEnv,
  ) {
    this.probe = new TemporalHealthCheck(connectionOptions(env));
  }
  onModuleInit(): void {
    this.health.register(this.probe);
  }
  async onApplicationShutdown(): Promise<void> {
    await Promise.all([this.connection.close(), this.probe.close()]);
  }
}

/**
 * The Temporal client this service starts and queries workflows with, injectable by its class. The
 * connection is lazy so the service boots (and answers /health) while Temporal is still starting; /ready
 * says when it is reachable. Workflows themselves run in the separate worker process (`temporal-worker.ts`).
 */
@Global()
@Module({
  providers: [
    {
      provide: Connection,
      inject: [ORCHESTRATOR_ENV],
      useFactory: (env: OrchestratorEnv) => Connection.lazy(connectionOptions(env)),
    },
    {
      provide: Client,
      inject: [Connection, ORCHESTRATOR_ENV],
      useFactory: (connection: Connection, env: OrchestratorEnv) =>
        new Client({ connection, namespace: env.TEMPORAL_NAMESPACE, interceptors: clientInterceptors() }),
    },
    TemporalLifecycle,
  ],
  exports: [Client],
})
export class TemporalModule {}
