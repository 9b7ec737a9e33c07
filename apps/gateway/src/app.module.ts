import { Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { ServiceKitModule } from '@switchboard/service-kit';
import { AccessModule } from './access/access.module';
import { GATEWAY_ENV, type GatewayEnv } from './config/env';
import { AuthFlowsController } from './connect/auth-flows.controller';
import { CurrentConnectSessionController } from './connect/current-connect-session.controller';
import { ConnectSessionsController } from './connect/connect-sessions.controller';
import { OAuthSockets } from './connect/oauth-sockets';
import { ConnectionMetadataController } from './connections/connection-metadata.controller';
import { ConnectionsController } from './connections/connections.controller';
import { ConsoleAuthController } from './console/console-auth.controller';
import { EnvironmentController } from './environment/environment.controller';
import { EnvironmentSettingsController } from './environment-settings/environment-settings.controller';
import { ErrorsFilter } from './http/errors.filter';
import { ContractPipe } from './http/validation';
import { ActionsController } from './functions/actions.controller';
import { DeployController } from './functions/deploy.controller';
import { FunctionsController } from './functions/functions.controller';
import { McpController } from './functions/mcp.controller';
import { RunsController } from './functions/runs.controller';
import { RecordsController } from './records/records.controller';
import { ScriptsConfigController } from './functions/scripts-config.controller';
import { IntegrationsController } from './integrations/integrations.controller';
import { OpenApiController } from './openapi/openapi.controller';
import { LogosController } from './providers/logos.controller';
import { ProvidersController } from './providers/providers.controller';
import { ProxyModule } from './proxy/proxy.module';
import { ServicesHealth } from './readiness/services-health';
import { SyncsController } from './syncs/syncs.controller';
import { WebhookDeliveriesController } from './webhooks/webhook-deliveries.controller';

/** The public API's controllers; each one validates, then asks the owning service over NATS. */
export const API_CONTROLLERS = [
  IntegrationsController,
  ProvidersController,
  EnvironmentController,
  ConnectionMetadataController,
  ConnectionsController,
  ConnectSessionsController,
  EnvironmentSettingsController,
  WebhookDeliveriesController,
  DeployController,
  FunctionsController,
  ScriptsConfigController,
  McpController,
  ActionsController,
  RunsController,
  RecordsController,
  SyncsController,
];

@Module({})
export class AppModule {
  static forRoot(env: GatewayEnv): DynamicModule {
    return {
      module: AppModule,
      global: true,
      imports: [
        ServiceKitModule.forRoot({
          name: 'gateway',
          nats: env,
          requestTimeoutMs: env.NATS_REQUEST_TIMEOUT_MS,
          // The public edge: which services run, their versions and what fails are for key holders only.
          readinessDetails: 'authenticated',
        }),
        AccessModule,
        ProxyModule.forRoot(env),
      ],
      // Session-token and browser routes (connect page, auth flows) are outside the key-scoped API list.
      controllers: [
        ...API_CONTROLLERS,
        CurrentConnectSessionController,
        AuthFlowsController,
        ConsoleAuthController,
        LogosController,
        OpenApiController,
      ],
      providers: [
        { provide: GATEWAY_ENV, useValue: env },
        { provide: APP_FILTER, useClass: ErrorsFilter },
        { provide: APP_PIPE, useClass: ContractPipe },
        ServicesHealth,
        OAuthSockets,
      ],
      exports: [GATEWAY_ENV],
    };
  }
}
