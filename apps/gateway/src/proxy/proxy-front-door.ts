import type { IncomingMessage, ServerResponse } from 'node:http';
import { PROXY_METHODS, ProxyError } from '@switchboard/proxy-engine';
import { httpServerMetrics } from '@switchboard/service-kit';
import type { FastifyInstance } from 'fastify';
import { BEARER, toCaller, UUID_V4 } from '../access/access.hook';
import type { ApiKeyResolver } from '../access/api-key.resolver';
import type { AccountRateLimiter } from '../access/rate-limiter';
import { CORS_RESPONSE_HEADERS } from '../http/cors';
import { enterFrontDoor, type FrontDoor, type Listener } from '../http/gateway-server';
import { writeErrorResponse } from '../http/error-reply';
import { isProxyTarget } from './proxy-path';
import { mayAimCredentials, type ProxyRoute } from './proxy-route';

const METHODS = new Set(PROXY_METHODS);
/** The route template the Fastify lane records `/proxy/...` calls under. */
const PROXY_ROUTE = '/proxy/*';

/**
 * Where `/proxy` requests enter the gateway, ahead of Fastify and of the HTTP instrumentation
 * (`gatewayServerFactory`). Every one gets its server span here, much cheaper than the instrumentation's. A
 * call that needs nothing but what this replica already holds — a cached secret key with
 * `environment:proxy`, a rate-limit slice with room left, the engine in this process — goes straight to
 * the engine: no Fastify request and reply, no hooks. Anything else (no key or an unknown one, a key to
 * look up, a rate limit to lease or refuse, an OPTIONS, a NUL in the target, the server closing, remote
 * mode) is handed to Fastify unchanged, inside the span, where the access hook, CORS and the proxy route
 * answer it as for any other route. Both ways give the same answer: the direct one writes the same CORS
 * and rate-limit headers and the same error shape (e2e: proxy-front-door).
 */
export class ProxyFrontDoor implements FrontDoor {
  private closing = false;

  constructor(
    private readonly keys: ApiKeyResolver,
    private readonly limiter: AccountRateLimiter,
    private readonly route: ProxyRoute,
    fastify: FastifyInstance,
  ) {
    fastify.addHook('preClose', (done) => {
      this.closing = true;
      done();
    });
  }

  takes(req: IncomingMessage): boolean {
    return isProxyTarget(req.url);
  }

  /** Serves a request it takes; `next` is Fastify's request listener. */
  handle(req: IncomingMessage, res: ServerResponse, next: Listener): void {
    // The Fastify lane is counted by service-kit's hook under the same route.
    enterFrontDoor(req, res, next, {
      route: PROXY_ROUTE,
      laneAttribute: 'switchboard.proxy.lane',
      admit: (r) => this.admit(r),
      serve: (direct) => this.serve(req, res, direct, performance.now()),
    });
  }

  /** What the direct path needs, when every check passes without a round trip; undefined hands the request to Fastify. */
  private admit(req: IncomingMessage):
    | {
        caller: ReturnType<typeof toCaller>;
        credentialsOnAnyOrigin: boolean;
        headers: Record<string, string | number>;
      }
    | undefined {
    if (!this.route.direct || this.closing) return undefined;
    const method = req.method ?? '';
    // OPTIONS, preflight or not, gets CORS preflight headers from the CORS hook: Fastify's.
    if (!METHODS.has(method) || method === 'OPTIONS') return undefined;
    const url = req.url!;
    if (url.includes('%00') || url.includes('\u0000') || !decodablePath(url)) return undefined;
    const header = req.headers.authorization;
    const token = header === undefined ? undefined : BEARER.exec(header)?.[1];
    if (!token || !UUID_V4.test(token)) return undefined;
    const key = this.keys.cached(token);
    if (!key || !key.scopes.includes('environment:proxy')) return undefined;
    const verdict = this.limiter.consumeLocal(`account:${key.accountId}`);
    if (!verdict) return undefined;
    return {
      caller: toCaller(key),
      credentialsOnAnyOrigin: mayAimCredentials(key.scopes),
      // In the order and spelling the CORS hook and the access hook give them on the Fastify path. (A
      // literal: spreading an object into one with more keys costs V8 ~2 µs.)
      headers: {
        'access-control-allow-origin': CORS_RESPONSE_HEADERS['access-control-allow-origin']!,
        'access-control-expose-headers': CORS_RESPONSE_HEADERS['access-control-expose-headers']!,
        'x-ratelimit-limit': verdict.limit,
        'x-ratelimit-remaining': verdict.remaining,
        'x-ratelimit-reset': verdict.resetAt,
      },
    };
  }

  /**
   * The engine resolves with its errors rather than rejecting; should writing one fail (or the engine break
   * that promise), the socket goes. One `then` with both handlers: each promise costs the async-hooks
   * context a little on every call.
   */
  private serve(
    req: IncomingMessage,
    res: ServerResponse,
    admitted: NonNullable<ReturnType<ProxyFrontDoor['admit']>>,
    start: number,
  ): void {
    void this.route.direct!(
      req,
      res,
      admitted.caller,
      admitted.headers,
      admitted.credentialsOnAnyOrigin,
    ).then(
      (error) => {
        if (error) {
          try {
            writeErrorResponse(res, error, {
              ...admitted.headers,
              ...(error instanceof ProxyError ? error.headers : {}),
            });
          } catch {
            res.destroy();
          }
        }
        httpServerMetrics.record(
          req.method!,
          PROXY_ROUTE,
          res.statusCode,
          (performance.now() - start) / 1000,
        );
      },
      () => res.destroy(),
    );
  }
}

/** Whether the router can decode the target's path (it refuses malformed percent-encoding). */
function decodablePath(url: string): boolean {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  if (!path.includes('%')) return true;
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}
