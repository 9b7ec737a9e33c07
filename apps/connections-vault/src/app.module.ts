import { Module, type DynamicModule } from '@nestjs/common';
import { ServiceKitModule } from '@switchboard/service-kit';
import { VAULT_ENV, type VaultEnv } from './config/env';
import { ConnectionsModule } from './connections/connections.module';
import { DatabaseModule } from './database/database.module';

@Module({})
export class AppModule {
  static forRoot(env: VaultEnv): DynamicModule {
    return {
      module: AppModule,
      global: true,
      imports: [
        ServiceKitModule.forRoot({ name: 'connections-vault', nats: env }),
        DatabaseModule,
        ConnectionsModule,
      ],
      providers: [{ provide: VAULT_ENV, useValue: env }],
      exports: [VAULT_ENV],
    };
  }
}
