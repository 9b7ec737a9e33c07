import { Module, type DynamicModule, type OnApplicationShutdown } from '@nestjs/common';
import { EgressPolicy } from '@switchboard/egress';
import { ServiceKitModule } from '@switchboard/service-kit';
import { ApiKeysModule } from './api-keys/api-keys.module';
import { AUTH_CONNECT_ENV, type AuthConnectEnv } from './config/env';
import { ConsoleModule } from './console/console.module';
import { ConnectPageModule } from './connect-page/connect-page.module';
import { ConnectSessionsModule } from './connect-sessions/connect-sessions.module';
import { DatabaseModule } from './database/database.module';
import { closeProviderEgress, configureProviderEgress } from './exchanges/provider-egress';
import { EnvironmentVariablesModule } from './environment-variables/environment-variables.module';
import { EnvironmentsModule } from './environments/environments.module';
import { FlowsModule } from './flows/flows.module';
import { IntegrationsModule } from './integrations/integrations.module';
import { ProvidersModule } from './providers/providers.module';
import { TokenRefreshModule } from './token-refresh/token-refresh.module';

@Module({})
export class AppModule implements OnApplicationShutdown {
  static forRoot(env: AuthConnectEnv): DynamicModule {
    // Before any flow can run; a malformed allow-list entry fails the boot here.
    configureProviderEgress(
      EgressPolicy.forTraffic(
        'SWITCHBOARD_TOKEN_EGRESS_ALLOW',
        env.SWITCHBOARD_TOKEN_EGRESS_ALLOW,
        env.SWITCHBOARD_EGRESS_ALLOW,
      ),
    );
    return {
      module: AppModule,
      global: true,
      imports: [
        ServiceKitModule.forRoot({ name: 'auth-connect', nats: env }),
        DatabaseModule,
        ProvidersModule,
        ApiKeysModule,
        ConsoleModule,
        IntegrationsModule,
        EnvironmentVariablesModule,
        EnvironmentsModule,
        TokenRefreshModule,
        ConnectSessionsModule,
        FlowsModule,
        ConnectPageModule,
      ],
      providers: [{ provide: AUTH_CONNECT_ENV, useValue: env }],
      exports: [AUTH_CONNECT_ENV],
    };
  }

  async onApplicationShutdown(): Promise<void> {
    await closeProviderEgress();
  }
}
