import type { IncomingMessage, ServerResponse } from 'node:http';
import { Injectable } from '@nestjs/common';
import type { Caller, SwitchboardError } from '@switchboard/contracts';
import { ProxyError, ProxyForwarder, type ReplyHeaders } from '@switchboard/proxy-engine';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { sendError } from '../http/error-reply';
import { ProxyRoute } from './proxy-route';

/**
 * Embedded mode: the forwarding engine runs in this process, so a proxied call costs one Node hop
 * instead of two. The provider's answer is written straight to the socket with the hooks' headers merged
 * in; our own errors go through the gateway's `sendError` like every other route's.
 */
@Injectable()
export class EmbeddedProxyRoute extends ProxyRoute {
  constructor(private readonly forwarder: ProxyForwarder) {
    super();
  }

  override direct(
    req: IncomingMessage,
    res: ServerResponse,
    caller: Caller,
    replyHeaders: ReplyHeaders,
    credentialsOnAnyOrigin: boolean,
  ): Promise<SwitchboardError | undefined> {
    return this.forwarder.handle({
      caller,
      method: req.method!,
      url: req.url!,
      req,
      res,
      replyHeaders,
      credentialsOnAnyOrigin,
    });
  }

  protected async forward(
    request: FastifyRequest,
    reply: FastifyReply,
    caller: Caller,
    credentialsOnAnyOrigin: boolean,
  ): Promise<FastifyReply | undefined> {
    const error = await this.direct(
      request.raw,
      reply.raw,
      caller,
      reply.getHeaders(),
      credentialsOnAnyOrigin,
    );
    if (!error) {
      // Answered on the socket (or the caller left): Fastify must not send anything itself.
      reply.hijack();
      return undefined;
    }
    if (error instanceof ProxyError)
      for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
    return sendError(reply, error.code, error.message, error.errors);
  }
}
