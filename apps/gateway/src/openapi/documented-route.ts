import type { RouteConfig } from '@asteasolutions/zod-to-openapi';
import type { Scope } from '@switchboard/contracts';
import type { z } from 'zod';

/**
 * A key-authenticated route as the OpenAPI document lists it (`document.ts` turns each into a path with its
 * security, scope and the common error answers). Each area of the API keeps its own list beside its
 * controllers; this is their one shape.
 */
export type DocumentedRoute = Omit<RouteConfig, 'responses' | 'security'> & {
  scope: Scope;
  ok: { status: number; schema: z.ZodType; description: string; headers?: Record<string, string> };
  /** Statuses beyond the common ones, with what they mean here. */
  errors?: Record<number, string>;
};

/** A JSON body (request or answer) of `schema`. */
export const json = (schema: z.ZodType) => ({ content: { 'application/json': { schema } } });
