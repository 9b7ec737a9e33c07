import { Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import type { Agent } from 'undici';
import { PROXY_ENV, type ProxyEnv } from '../config/env';
import { createEgressAgent, EgressPolicy } from '@switchboard/egress';
import { ConnectionResolver } from './connection-resolver';
import { Exchange } from './exchange';
import { ProxyForwarder } from './forwarder';
import { ProxyRoute } from './proxy.route';
import { RateLimitGovernor } from './rate-limit-governor';

const EGRESS_AGENT = Symbol('EGRESS_AGENT');

class AgentCloser implements OnApplicationShutdown {
  constructor(@Inject(EGRESS_AGENT) private readonly agent: Agent) {}
  async onApplicationShutdown(): Promise<void> {
    await this.agent.destroy().catch(() => undefined);
  }
}

@Module({
  providers: [
    ConnectionResolver,
    ProxyRoute,
    AgentCloser,
    { provide: EgressPolicy, inject: [PROXY_ENV], useFactory: (env: ProxyEnv) => new EgressPolicy(env.SWITCHBOARD_EGRESS_ALLOW) },
    {
      provide: EGRESS_AGENT,
      inject: [PROXY_ENV, EgressPolicy],
      useFactory: (env: ProxyEnv, policy: EgressPolicy) => createEgressAgent({ policy, connectTimeoutMs: env.SWITCHBOARD_PROXY_CONNECT_TIMEOUT_MS }),
    },
    {
      provide: Exchange,
      inject: [PROXY_ENV, EGRESS_AGENT, EgressPolicy],
      useFactory: (env: ProxyEnv, agent: Agent, policy: EgressPolicy) =>
        new Exchange(
          agent,
          policy,
          { headersTimeoutMs: env.SWITCHBOARD_PROXY_HEADERS_TIMEOUT_MS, bodyTimeoutMs: env.SWITCHBOARD_PROXY_BODY_TIMEOUT_MS },
          env.SWITCHBOARD_PROXY_MAX_REDIRECTS,
        ),
    },
    { provide: RateLimitGovernor, inject: [PROXY_ENV], useFactory: (env: ProxyEnv) => new RateLimitGovernor(env.SWITCHBOARD_PROXY_RATE_LIMIT_MAX_WAIT_MS) },
    {
      provide: ProxyForwarder,
      inject: [PROXY_ENV, ConnectionResolver, Exchange, RateLimitGovernor],
      useFactory: (env: ProxyEnv, connections: ConnectionResolver, exchange: Exchange, governor: RateLimitGovernor) =>
        new ProxyForwarder(env, connections, exchange, governor),
    },
  ],
  exports: [ProxyRoute],
})
export class ForwardingModule {}
