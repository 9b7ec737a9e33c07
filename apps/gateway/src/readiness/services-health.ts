import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { healthRequest, SERVICE_NAMES } from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import { HealthRegistry } from '@switchboard/service-kit';
import { GATEWAY_ENV, type GatewayEnv } from '../config/env';

/**
 * The gateway's readiness view lists every service, as each one reports itself over NATS. With the
 * proxy embedded, the proxy service is not on the gateway's path, so it is left out: the gateway is
 * ready (and serves /proxy) without it. These checks are peers: `GET /ready?scope=self` (the chart's
 * readiness probe) leaves them out, so one service down does not take the whole API out of rotation.
 */
@Injectable()
export class ServicesHealth implements OnModuleInit {
  constructor(
    private readonly registry: HealthRegistry,
    private readonly nats: NatsRequester,
    @Inject(GATEWAY_ENV) private readonly env: GatewayEnv,
  ) {}

  onModuleInit(): void {
    const skipped = new Set([
      'gateway',
      ...(this.env.SWITCHBOARD_PROXY_MODE === 'embedded' ? ['proxy'] : []),
    ]);
    for (const service of SERVICE_NAMES.filter((s) => !skipped.has(s))) {
      this.registry.register({
        name: service,
        readinessOnly: true,
        peer: true,
        check: async () => {
          const report = await this.nats.call(healthRequest(service), {}, { timeoutMs: 1500 });
          const failing = report.checks.filter((c) => !c.ok).map((c) => c.name);
          return {
            ok: report.status === 'ready',
            detail: failing.length ? `not ready: ${failing.join(', ')}` : report.status,
          };
        },
      });
    }
  }
}
