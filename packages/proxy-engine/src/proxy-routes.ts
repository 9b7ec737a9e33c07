import type { FastifyInstance, RouteHandlerMethod } from 'fastify';

/** Every method the official client can send on `/proxy`, plus HEAD and OPTIONS. */
export const PROXY_METHODS = [
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'OPTIONS',
  'PROPFIND',
  'REPORT',
];

/**
 * `/proxy` and `/proxy/*` as bare Fastify routes in a scope of their own without body parser: the body
 * is left unread for the engine to stream to the provider, and the answer is written to the socket, so
 * nothing buffers a large upload or download. `config` is the routes' Fastify config (access, CORS).
 */
export function registerProxyRoutes(
  fastify: FastifyInstance,
  handler: RouteHandlerMethod,
  config: Record<string, unknown> = {},
): void {
  for (const method of ['PROPFIND', 'REPORT']) {
    if (!fastify.supportedMethods.includes(method)) fastify.addHttpMethod(method, { hasBody: true });
  }
  void fastify.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_req, _payload, done) => done(null));
    for (const url of ['/proxy', '/proxy/*']) {
      scope.route({ method: PROXY_METHODS, url, exposeHeadRoute: false, config, handler });
    }
  });
}
