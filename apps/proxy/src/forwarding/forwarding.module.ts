import { Module, type DynamicModule } from '@nestjs/common';
import { ProxyEngineModule } from '@switchboard/proxy-engine';
import type { ProxyEnv } from '../config/env';
import { ProxyRoute } from './proxy.route';

@Module({})
export class ForwardingModule {
  static forRoot(env: ProxyEnv): DynamicModule {
    return {
      module: ForwardingModule,
      imports: [ProxyEngineModule.register({ env })],
      providers: [ProxyRoute],
      exports: [ProxyRoute],
    };
  }
}
