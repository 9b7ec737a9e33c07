import { Controller } from '@nestjs/common';
import { type RefreshTokenResult, AUTH_INTERNAL_REQUESTS } from '@switchboard/contracts';
import { NatsHandler } from '@switchboard/messaging';
import { TokenRefreshService, type RefreshTokenRequest } from './token-refresh.service';

/**
 * The vault asks here when a connection's token must be refreshed. This side only talks to the provider:
 * the vault holds the per-connection lock, stores the result and records failures.
 */
@Controller()
export class TokenRefreshHandlers {
  constructor(private readonly tokenRefresh: TokenRefreshService) {}

  @NatsHandler(AUTH_INTERNAL_REQUESTS.refresh)
  async refresh(req: RefreshTokenRequest): Promise<RefreshTokenResult> {
    return this.tokenRefresh.refresh(req);
  }
}
