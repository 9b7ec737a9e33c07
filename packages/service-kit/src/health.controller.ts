import { Controller, Get, Inject, Req, Res } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { healthRequest, type HealthReport, type ServiceName } from '@switchboard/contracts';
import { NatsHandler } from '@switchboard/messaging';
import { HealthRegistry } from './health.registry';

export const SERVICE_IDENTITY = Symbol('SERVICE_IDENTITY');
export const READINESS_DETAILS = Symbol('READINESS_DETAILS');

/**
 * Set to true on a request by an access layer that verified the caller's key on an open route (the
 * gateway does for `GET /ready`): such a caller sees the readiness checks where they are otherwise hidden.
 */
export const READINESS_VIEWER = 'readinessViewer';
export interface ServiceIdentity {
  name: ServiceName;
  version: string;
  startedAt: number;
}

export async function buildReport(
  identity: ServiceIdentity,
  registry: HealthRegistry,
  selfOnly = false,
): Promise<HealthReport> {
  const checks = await registry.run(selfOnly ? (c) => !c.peer : undefined);
  return {
    service: identity.name,
    status: checks.every((c) => c.ok) ? 'ready' : 'not_ready',
    version: identity.version,
    uptime_s: Math.round((Date.now() - identity.startedAt) / 1000),
    checks,
  };
}

/**
 * Fastify route config marking a route as open without credentials; an access layer (the gateway's)
 * must let such routes through. Probes must never need a key.
 */
export const PublicRoute = () => RouteConfig({ access: { public: true } });

/** Open without credentials, but a key, when presented and valid, is recognised (see READINESS_VIEWER). */
export const PublicRouteWithOptionalKey = () => RouteConfig({ access: { public: true, optionalKey: true } });

/**
 * `GET /health`: alive and connected to NATS. `GET /ready`: every registered dependency answers;
 * `GET /ready?scope=self`: every dependency of this process, without the other services it lists.
 */
@Controller()
export class HealthController {
  constructor(
    private readonly registry: HealthRegistry,
    @Inject(SERVICE_IDENTITY) private readonly identity: ServiceIdentity,
    @Inject(READINESS_DETAILS) private readonly details: 'everyone' | 'authenticated',
  ) {}

  @Get('health')
  @PublicRoute()
  async health(@Res() reply: FastifyReply): Promise<void> {
    const checks = await this.registry.run((c) => !c.readinessOnly);
    const ok = checks.every((c) => c.ok);
    await reply.status(ok ? 200 : 503).send(ok ? { result: 'ok' } : { result: 'unavailable', checks });
  }

  @Get('ready')
  @PublicRouteWithOptionalKey()
  async ready(@Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const scope = (request.query as Record<string, unknown> | undefined)?.['scope'];
    const report = await buildReport(this.identity, this.registry, scope === 'self');
    const code = report.status === 'ready' ? 200 : 503;
    const viewer = (request as unknown as Record<string, unknown>)[READINESS_VIEWER] === true;
    // The checks name every service, version and failing dependency: not for anonymous callers of an edge.
    if (this.details === 'authenticated' && !viewer) {
      await reply.status(code).send({ status: report.status });
      return;
    }
    await reply.status(code).send(report);
  }
}

/** The same readiness report over NATS, so the gateway can list every service. */
export function createHealthHandler(name: ServiceName) {
  @Controller()
  class NatsHealthHandler {
    constructor(
      readonly registry: HealthRegistry,
      @Inject(SERVICE_IDENTITY) readonly identity: ServiceIdentity,
    ) {}

    @NatsHandler(healthRequest(name))
    async check(): Promise<HealthReport> {
      return buildReport(this.identity, this.registry);
    }
  }
  return NatsHealthHandler;
}
