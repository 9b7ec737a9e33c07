import { Controller } from '@nestjs/common';
import {
  AUTH_INTERNAL_SUBJECTS,
  refreshTokenRequestSchema,
  type RefreshTokenResult,
} from '@switchboard/contracts';
import { NatsHandler } from '@switchboard/messaging';
import { TokenRefreshService, type RefreshTokenRequest } from './token-refresh.service';

/**
 * The vault asks here when a connection's token must be refreshed. This side only talks to the provider:
 * the vault holds the per-connection lock, stores the result and records failures.
 */
@Controller()
export class TokenRefreshHandlers {
  constructor(private readonly tokenRefresh: TokenRefreshService) {}

  @NatsHandler(AUTH_INTERNAL_SUBJECTS.refresh, refreshTokenRequestSchema)
  async refresh(req: RefreshTokenRequest): Promise<RefreshTokenResult> {
    return this.tokenRefresh.refresh(req);
  }
}
