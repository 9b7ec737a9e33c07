import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import { SwitchboardError, type Caller as CallerType } from '@switchboard/contracts';
import type { FastifyRequest } from 'fastify';

/** The authenticated caller; the access hook guarantees it on every non-public route. */
export const Caller = createParamDecorator((_data: unknown, ctx: ExecutionContext): CallerType => {
  const caller = ctx.switchToHttp().getRequest<FastifyRequest>().caller;
  if (!caller) throw new SwitchboardError('forbidden', 'This route requires a secret key');
  return caller;
});

/** The scopes of the calling key, for routes whose options need extra scopes. */
export const CallerScopes = createParamDecorator(
  (_data: unknown, ctx: ExecutionContext) => ctx.switchToHttp().getRequest<FastifyRequest>().scopes ?? [],
);
