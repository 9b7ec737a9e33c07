import { Module, type DynamicModule } from '@nestjs/common';
import { ProxyEngineModule } from '@switchboard/proxy-engine';
import type { GatewayEnv } from '../config/env';
import { EmbeddedProxyRoute } from './embedded-proxy.route';
import { ProxyRelay } from './proxy-relay';
import { ProxyRoute } from './proxy-route';

/** `/proxy/*` as `SWITCHBOARD_PROXY_MODE` says: the engine in this process, or a relay to the proxy service. */
@Module({})
export class ProxyModule {
  static forRoot(env: GatewayEnv): DynamicModule {
    if (env.SWITCHBOARD_PROXY_MODE === 'remote') {
      return {
        module: ProxyModule,
        providers: [{ provide: ProxyRoute, useClass: ProxyRelay }],
        exports: [ProxyRoute],
      };
    }
    return {
      module: ProxyModule,
      imports: [ProxyEngineModule.register({ env })],
      providers: [{ provide: ProxyRoute, useClass: EmbeddedProxyRoute }],
      exports: [ProxyRoute],
    };
  }
}
