import { z } from 'zod';
import { natsRequest } from './nats-request';

export const SERVICE_NAMES = [
  'gateway',
  'auth-connect',
  'connections-vault',
  'proxy',
  'functions-runtime',
  'sync-orchestrator',
  'webhook-relay',
] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

export const dependencyCheckSchema = z.object({
  name: z.string(),
  ok: z.boolean(),
  detail: z.string().optional(),
});

export const healthReportSchema = z.object({
  service: z.string(),
  status: z.enum(['ready', 'not_ready']),
  version: z.string(),
  uptime_s: z.number(),
  checks: z.array(dependencyCheckSchema),
});
export type HealthReport = z.infer<typeof healthReportSchema>;

/** Each service answers readiness over NATS on its own subject (queue group = service name). */
export const healthSubject = (service: ServiceName): string => `${service}.v1.health.check`;

/** A service's readiness request (its health subject). */
export const healthRequest = (service: ServiceName) =>
  natsRequest({ subject: healthSubject(service), request: z.looseObject({}), reply: healthReportSchema });

/** Every service's health subject (what the gateway's readiness view calls). */
export const HEALTH_SUBJECT_PATTERN = '*.v1.health.check';
