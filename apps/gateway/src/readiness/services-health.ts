import { Injectable, type OnModuleInit } from '@nestjs/common';
import { healthSubject, SERVICE_NAMES, type HealthReport } from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import { HealthRegistry } from '@switchboard/service-kit';

/** The gateway's readiness view lists every service, as each one reports itself over NATS. */
@Injectable()
export class ServicesHealth implements OnModuleInit {
  constructor(
    private readonly registry: HealthRegistry,
    private readonly nats: NatsRequester,
  ) {}

  onModuleInit(): void {
    for (const service of SERVICE_NAMES.filter((s) => s !== 'gateway')) {
      this.registry.register({
        name: service,
        readinessOnly: true,
        check: async () => {
          const report = await this.nats.request<HealthReport>(healthSubject(service), {}, { timeoutMs: 1500 });
          const failing = report.checks.filter((c) => !c.ok).map((c) => c.name);
          return { ok: report.status === 'ready', detail: failing.length ? `not ready: ${failing.join(', ')}` : report.status };
        },
      });
    }
  }
}
