import { Module } from '@nestjs/common';
import { SyncsModule } from '../syncs/syncs.module';
import { NATS_CONNECTION, NatsRequester } from '@switchboard/messaging';
import type { OrchestratorDb } from '@switchboard/db';
import type { NatsConnection } from 'nats';
import { ActionRuns } from '../actions/action-runs';
import { DeployedFunctionsCache } from './deployed-functions-cache';
import { ActionsHandlers } from '../actions/actions.handlers';
import { ActionsService } from '../actions/actions.service';
import { FunctionInvocationRunner } from './function-invocation-runner';
import { CheckpointsHandlers } from '../checkpoints/checkpoints.handlers';
import { LocksHandlers } from '../locks/locks.handlers';
import { KnownConnectionsModule } from '../connections/known-connections';
import { ORCHESTRATOR_ENV, type OrchestratorEnv } from '../config/env';
import { ORCHESTRATOR_DB } from '../database/database.module';
import { AuthEventsConsumer } from '../on-event/auth-events.consumer';
import { OnEventHandlers } from '../on-event/on-event.handlers';
import { OnEventService } from '../on-event/on-event.service';
import { SyncWebhooksConsumer } from '../sync-webhooks/sync-webhooks.consumer';
import { SyncWebhooksHandlers } from '../sync-webhooks/sync-webhooks.handlers';
import { SyncWebhooksService } from '../sync-webhooks/sync-webhooks.service';
import { DeployPlanner } from './deploy-plan';
import { DeployService } from './deploy.service';
import { FunctionsHandlers } from './functions.handlers';
import { FunctionsRepository } from './functions.repository';
import { IntegrationDirectory } from './integration-directory';

/** Deployed functions, their API, actions, on-event scripts, syncs' onWebhook runs and checkpoints. */
@Module({
  imports: [SyncsModule, KnownConnectionsModule],
  controllers: [
    FunctionsHandlers,
    ActionsHandlers,
    CheckpointsHandlers,
    LocksHandlers,
    OnEventHandlers,
    SyncWebhooksHandlers,
  ],
  providers: [
    DeployPlanner,
    DeployService,
    FunctionsRepository,
    IntegrationDirectory,
    DeployedFunctionsCache,
    ActionsService,
    ActionRuns,
    OnEventService,
    AuthEventsConsumer,
    SyncWebhooksService,
    SyncWebhooksConsumer,
    {
      provide: FunctionInvocationRunner,
      inject: [ORCHESTRATOR_DB, NatsRequester, NATS_CONNECTION, ORCHESTRATOR_ENV],
      useFactory: (db: OrchestratorDb, nats: NatsRequester, nc: NatsConnection, env: OrchestratorEnv) =>
        new FunctionInvocationRunner(db, nats, nc, env.SWITCHBOARD_ACTION_HEARTBEAT_TIMEOUT_MS),
    },
  ],
  exports: [ActionsService],
})
export class FunctionsModule {}
