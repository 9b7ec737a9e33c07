import { z } from 'zod';

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

/** Every service's health subject (what the gateway's readiness view calls). */
export const HEALTH_SUBJECT_PATTERN = '*.v1.health.check';
