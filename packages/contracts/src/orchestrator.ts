import { z } from 'zod';

export const ORCHESTRATOR_SUBJECTS = {
  /** Runs a trivial workflow end to end: proves Temporal and a worker on the task queue are both up. */
  pingRun: 'orchestrator.v1.ping.run',
} as const;

export const pingRunSchema = z.object({ name: z.string().min(1).max(200) });
export type PingRun = z.infer<typeof pingRunSchema>;
export const pingResultSchema = z.object({ greeting: z.string(), workflowId: z.string() });
export type PingResult = z.infer<typeof pingResultSchema>;
