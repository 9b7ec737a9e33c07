import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { context, propagation, ROOT_CONTEXT, trace } from '@switchboard/observability';
import type { FastifyServerFactory, FastifyServerOptions } from 'fastify';
import { startServerSpan } from './server-span';

export type Listener = (req: IncomingMessage, res: ServerResponse) => void;

/** Takes some requests before Fastify (and before the HTTP instrumentation) sees them. */
export interface FrontDoor {
  takes(req: IncomingMessage): boolean;
  /** `fastify` is Fastify's request listener, for requests the door hands on after all. */
  handle(req: IncomingMessage, res: ServerResponse, fastify: Listener): void;
}

/**
 * How a front door takes a request: inside the request's server span (`route` its template), `admit`
 * says whether the direct lane may serve it (what it needs, or undefined); the span's `laneAttribute`
 * records the lane, and the request is served directly or handed to Fastify (`fastify`).
 */
export function enterFrontDoor<T>(
  req: IncomingMessage,
  res: ServerResponse,
  fastify: Listener,
  lane: {
    route: string;
    laneAttribute: string;
    admit: (req: IncomingMessage) => T | undefined;
    serve: (admitted: T) => void;
  },
): void {
  const parent = propagation.extract(ROOT_CONTEXT, req.headers);
  const span = startServerSpan(req, res, parent, lane.route);
  context.with(trace.setSpan(parent, span), () => {
    const admitted = lane.admit(req);
    span.setAttribute(lane.laneAttribute, admitted ? 'direct' : 'framework');
    if (admitted) lane.serve(admitted);
    else fastify(req, res);
  });
}

/**
 * A Fastify `serverFactory` for a plain HTTP/1 server, set up with the timeouts Fastify would give its
 * own. Requests a front door takes (once the app is configured and `doors()` lists it) are given to it
 * from the server's `emit`, ahead of the prototype's `emit` that the OpenTelemetry HTTP instrumentation
 * wraps: the door makes the span of those requests itself, for a fraction of the instrumentation's cost
 * (which it would pay even for requests it is told to ignore). Every other request takes the usual way.
 */
export function gatewayServerFactory(doors: () => readonly FrontDoor[]): FastifyServerFactory {
  return ((fastify: Listener, options: FastifyServerOptions & { http?: object }) => {
    const server: Server = createServer(options.http ?? {}, fastify);
    const emit = server.emit;
    server.emit = function (this: Server, event: string | symbol, ...args: unknown[]): boolean {
      if (event === 'request') {
        const req = args[0] as IncomingMessage;
        for (const front of doors()) {
          if (front.takes(req)) {
            front.handle(req, args[1] as ServerResponse, fastify);
            return true;
          }
        }
      }
      return emit.apply(this, [event, ...args] as Parameters<Server['emit']>);
    } as Server['emit'];
    if (options.keepAliveTimeout !== undefined) server.keepAliveTimeout = options.keepAliveTimeout;
    if (options.requestTimeout !== undefined) server.requestTimeout = options.requestTimeout;
    if (options.connectionTimeout !== undefined) server.setTimeout(options.connectionTimeout);
    if (options.maxRequestsPerSocket) server.maxRequestsPerSocket = options.maxRequestsPerSocket;
    return server;
  }) as unknown as FastifyServerFactory;
}
