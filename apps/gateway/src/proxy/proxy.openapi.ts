import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { errorBodySchema, proxyRequestHeadersSchema, SCOPES } from '@switchboard/contracts';
import { z } from 'zod';

export const PROXY_SCOPE = 'environment:proxy';
export const PROXY_DOCUMENTED_METHODS = ['get', 'post', 'put', 'patch', 'delete', 'head', 'options'] as const;

const ourError = (description: string) => ({
  description,
  content: { 'application/json': { schema: errorBodySchema } },
});

const HEADER_NOTES: Partial<Record<keyof typeof proxyRequestHeadersSchema.shape, string>> = {
  'provider-config-key': 'The integration (its unique key)',
  'connection-id': 'The connection whose credentials are injected',
  retries:
    'Extra attempts on 5xx, 429, resets and timeouts (default 0; a non-idempotent method is retried on a 5xx only if listed in Retry-On)',
  'base-url-override': "Another base URL than the provider's (empty: the provider's)",
  decompress: '`true`: answer the body decompressed (gzip, deflate, br)',
  'retry-on': 'Comma-separated status codes that are retried too',
  'forward-headers-on-redirect':
    'Send the credentials on a redirect to another origin too (only for a key holding environment:connections:read_credentials)',
};

/** The contract's schema, each header with its note. */
const headers = z.object(
  Object.fromEntries(
    Object.entries(proxyRequestHeadersSchema.shape).map(([name, schema]) => {
      const note = HEADER_NOTES[name as keyof typeof HEADER_NOTES];
      return [name, note ? schema.describe(note) : schema];
    }),
  ),
);

/**
 * `/proxy/{endpoint}`: not a Nest controller (the gateway's front door and the proxy route serve it), so
 * registered here beside the controllers' routes. One operation per method, all alike.
 */
export function registerProxyPaths(registry: OpenAPIRegistry): void {
  for (const method of PROXY_DOCUMENTED_METHODS) {
    registry.registerPath({
      method,
      path: '/proxy/{endpoint}',
      summary: `${method.toUpperCase()} a provider endpoint with a connection's credentials`,
      description:
        `Requires scope \`${PROXY_SCOPE}\` (${SCOPES[PROXY_SCOPE]}). \`{endpoint}\` is the provider path and may hold ` +
        "further `/` segments; the query string goes on verbatim. `Nango-Proxy-<Name>` headers are sent as `<Name>`; the caller's " +
        "`Authorization` never is. Bodies stream both ways. The provider's answer (status, headers less per-hop ones, body) comes back " +
        'unchanged, errors included; only the statuses below with the error body are our own. PROPFIND and REPORT (WebDAV, ' +
        'CalDAV providers) are proxied the same way; OpenAPI has no way to list them.',
      security: [{ secretKey: [PROXY_SCOPE] }],
      request: {
        params: z.object({
          endpoint: z.string().describe('The provider path, e.g. `repos/octo/hello/issues`'),
        }),
        headers,
        ...(method === 'post' || method === 'put' || method === 'patch'
          ? {
              body: {
                content: {
                  '*/*': {
                    schema: z
                      .string()
                      .describe('Sent to the provider as it is (any media type, multipart too)'),
                  },
                },
              },
            }
          : {}),
      },
      responses: {
        default: { description: "The provider's response, unchanged" },
        400: ourError(
          'Missing or invalid Nango headers (`invalid_headers`), an endpoint that would leave the provider host (`invalid_uri_params`)',
        ),
        401: ourError('Missing, malformed or unknown secret key'),
        403: ourError(
          'The key lacks the scope (`forbidden`), or the destination is refused by the egress policy (`egress_refused`)',
        ),
        404: ourError('Unknown integration (`unknown_provider_config`) or connection (`unknown_connection`)'),
        424: ourError(
          'The credentials could not be refreshed (`connection_refresh_backoff`, `connection_refresh_exhausted`)',
        ),
        429: ourError(
          "The account's rate limit, or the provider's known limit for this connection resets too late (`too_many_request`); see Retry-After",
        ),
        502: ourError('The provider could not be reached (`bad_gateway`)'),
        504: ourError('The provider did not answer in time (`gateway_timeout`)'),
      },
    });
  }
}
