import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import {
  SwitchboardError,
  type VerifiedConnectSession,
  CONNECT_SESSION_REQUESTS,
} from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';

/**
 * Resolves a connect session token to its session by asking auth-connect with the token's hash. Not
 * cached: a session is deleted (DELETE /connect/session) or expires on its own schedule, and the routes
 * that take one are few and interactive.
 */
@Injectable()
export class SessionTokenResolver {
  constructor(private readonly nats: NatsRequester) {}

  async resolve(token: string): Promise<VerifiedConnectSession | null> {
    const tokenHash = createHash('sha256').update(token, 'utf8').digest('hex');
    try {
      return await this.nats.call(CONNECT_SESSION_REQUESTS.verify, { tokenHash }, { timeoutMs: 5000 });
    } catch (error) {
      if (error instanceof SwitchboardError && error.code === 'unknown_connect_session_token') return null;
      throw error;
    }
  }
}
