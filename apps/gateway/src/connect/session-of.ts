import { SwitchboardError, type Caller } from '@switchboard/contracts';
import type { FastifyRequest } from 'fastify';

/** The caller and session a connect session token resolved to; the access hook guarantees both on session routes. */
export function sessionOf(request: FastifyRequest): {
  caller: Caller;
  sessionId: number;
  allowedIntegrations: string[] | null;
} {
  const session = request.connectSession;
  if (!session || !request.caller)
    throw new SwitchboardError(
      'unknown_connect_session_token',
      'This route requires a connect session token',
    );
  return {
    caller: request.caller,
    sessionId: session.sessionId,
    allowedIntegrations: session.allowedIntegrations,
  };
}
