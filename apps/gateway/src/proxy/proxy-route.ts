import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Caller, Scope, SwitchboardError } from '@switchboard/contracts';
import type { ReplyHeaders } from '@switchboard/proxy-engine';
import { registerProxyRoutes } from '@switchboard/proxy-engine';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RouteAccess } from '../access/route-access';
import { sendError } from '../http/error-reply';

/**
 * `/proxy` and `/proxy/*` on the public edge, whichever way the gateway serves them (embedded engine or
 * remote proxy service). Registered last, so the route's scope inherits the access hook and CORS: by the
 * time `forward` runs the key is authenticated, counted and has `environment:proxy`, and the hooks' rate
 * limit and CORS headers are on the reply. No body parser: the body is streamed on unread.
 */
export abstract class ProxyRoute {
  register(fastify: FastifyInstance): void {
    const config = {
      access: { scope: 'environment:proxy' } satisfies RouteAccess,
      // A plain OPTIONS is a provider call like any other; only a real preflight is answered here (below).
      cors: { strictPreflight: false, preflightContinue: true },
    };
    registerProxyRoutes(fastify, (request, reply) => this.handle(request, reply), config);
  }

  /**
   * Set where a call can be served from the raw request (embedded mode), for the front door's direct path:
   * runs it to its end and resolves with the error the caller must get, if any (nothing written yet).
   */
  direct?(
    req: IncomingMessage,
    res: ServerResponse,
    caller: Caller,
    replyHeaders: ReplyHeaders,
    credentialsOnAnyOrigin: boolean,
  ): Promise<SwitchboardError | undefined>;

  /** Streams the call to the provider and its answer back, or answers with one of our errors. */
  protected abstract forward(
    request: FastifyRequest,
    reply: FastifyReply,
    caller: Caller,
    credentialsOnAnyOrigin: boolean,
  ): Promise<FastifyReply | undefined>;

  private handle(
    request: FastifyRequest,
    reply: FastifyReply,
  ): FastifyReply | Promise<FastifyReply | undefined> {
    const caller = request.caller;
    // A browser's CORS preflight carries no key; the CORS hook has put its answer headers on the reply.
    if (!caller && request.method === 'OPTIONS' && request.headers['access-control-request-method']) {
      return reply.code(204).header('content-length', '0').send();
    }
    if (!caller) return sendError(reply, 'forbidden', 'This route requires a secret key');
    return this.forward(request, reply, caller, mayAimCredentials(request.scopes));
  }
}

/**
 * A key that may read a connection's credentials may as well send them to a Base-Url-Override origin of
 * its choosing; any other key's override gets them only on the provider's own origin.
 */
export function mayAimCredentials(scopes: readonly Scope[]): boolean {
  return scopes.includes('environment:connections:read_credentials');
}
