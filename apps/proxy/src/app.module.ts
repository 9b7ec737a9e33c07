import { Module, type DynamicModule } from '@nestjs/common';
import { ServiceKitModule } from '@switchboard/service-kit';
import { PROXY_ENV, type ProxyEnv } from './config/env';
import { ForwardingModule } from './forwarding/forwarding.module';

@Module({})
export class AppModule {
  static forRoot(env: ProxyEnv): DynamicModule {
    return {
      module: AppModule,
      global: true,
      imports: [ServiceKitModule.forRoot({ name: 'proxy', nats: env }), ForwardingModule.forRoot(env)],
      providers: [{ provide: PROXY_ENV, useValue: env }],
      exports: [PROXY_ENV],
    };
  }
}
