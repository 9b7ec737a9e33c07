import { Module, type DynamicModule } from '@nestjs/common';
import { ServiceKitModule } from '@switchboard/service-kit';
import type { FunctionsRuntimeEnv } from './config/env';

@Module({})
export class AppModule {
  static forRoot(env: FunctionsRuntimeEnv): DynamicModule {
    return {
      module: AppModule,
      imports: [ServiceKitModule.forRoot({ name: 'functions-runtime', natsUrl: env.NATS_URL })],
    };
  }
}
