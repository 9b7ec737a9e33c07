import { Inject, Module, type DynamicModule, type OnApplicationShutdown } from '@nestjs/common';
import { createEgressAgent, EgressPolicy } from '@switchboard/egress';
import type { Agent } from 'undici';
import { ConnectionResolver } from './connection-resolver';
import { Exchange } from './exchange';
import { ProxyForwarder } from './forwarder';
import { PROXY_ENGINE_ENV, type ProxyEngineEnv } from './proxy-engine.env';
import { RateLimitGovernor } from './rate-limit-governor';

const EGRESS_AGENT = Symbol('EGRESS_AGENT');

class AgentCloser implements OnApplicationShutdown {
  constructor(@Inject(EGRESS_AGENT) private readonly agent: Agent) {}
  async onApplicationShutdown(): Promise<void> {
    await this.agent.destroy().catch(() => undefined);
  }
}

export interface ProxyEngineOptions {
  /** The app's parsed env; it spreads `proxyEngineEnv` into its own schema. */
  env: ProxyEngineEnv;
}

/**
 * The forwarding engine for whichever app serves `/proxy/*`: `ProxyForwarder` with the egress policy and
 * its pinned agent, the exchange, the NATS connection resolver (needs `NatsRequester`, which service-kit
 * provides globally) and the per-connection rate-limit governor.
 */
@Module({})
export class ProxyEngineModule {
  static register(options: ProxyEngineOptions): DynamicModule {
    return {
      module: ProxyEngineModule,
      providers: [
        { provide: PROXY_ENGINE_ENV, useValue: options.env },
        ConnectionResolver,
        AgentCloser,
        {
          provide: EgressPolicy,
          useFactory: () =>
            EgressPolicy.forTraffic(
              'SWITCHBOARD_PROXY_EGRESS_ALLOW',
              options.env.SWITCHBOARD_PROXY_EGRESS_ALLOW,
              options.env.SWITCHBOARD_EGRESS_ALLOW,
            ),
        },
        {
          provide: EGRESS_AGENT,
          inject: [EgressPolicy],
          useFactory: (policy: EgressPolicy) =>
            createEgressAgent({ policy, connectTimeoutMs: options.env.SWITCHBOARD_PROXY_CONNECT_TIMEOUT_MS }),
        },
        {
          provide: Exchange,
          inject: [EGRESS_AGENT, EgressPolicy],
          useFactory: (agent: Agent, policy: EgressPolicy) =>
            new Exchange(
              agent,
              policy,
              {
                headersTimeoutMs: options.env.SWITCHBOARD_PROXY_HEADERS_TIMEOUT_MS,
                bodyTimeoutMs: options.env.SWITCHBOARD_PROXY_BODY_TIMEOUT_MS,
              },
              options.env.SWITCHBOARD_PROXY_MAX_REDIRECTS,
            ),
        },
        {
          provide: RateLimitGovernor,
          useFactory: () => new RateLimitGovernor(options.env.SWITCHBOARD_PROXY_RATE_LIMIT_MAX_WAIT_MS),
        },
        {
          provide: ProxyForwarder,
          inject: [ConnectionResolver, Exchange, RateLimitGovernor],
          useFactory: (connections: ConnectionResolver, exchange: Exchange, governor: RateLimitGovernor) =>
            new ProxyForwarder(options.env, connections, exchange, governor),
        },
      ],
      exports: [ProxyForwarder],
    };
  }
}
