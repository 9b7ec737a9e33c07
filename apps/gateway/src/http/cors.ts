/**
 * The gateway's CORS policy: any origin, no credentials (every call carries a secret key or a session
 * token, never cookies). One constant for `app.enableCors` and for the proxy front door, which writes the
 * same headers itself on the requests it serves without Fastify.
 */
export const CORS_POLICY = {
  origin: '*',
  exposedHeaders: [
    'Content-Type',
    'Content-Length',
    'X-RateLimit-Limit',
    'X-RateLimit-Remaining',
    'X-RateLimit-Reset',
    'Retry-After',
  ],
} as const;

/** What @fastify/cors writes on a non-preflight request under `CORS_POLICY`. */
export const CORS_RESPONSE_HEADERS: Readonly<Record<string, string>> = {
  'access-control-allow-origin': CORS_POLICY.origin,
  'access-control-expose-headers': CORS_POLICY.exposedHeaders.join(', '),
};
