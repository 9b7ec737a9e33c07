import { Global, Module } from '@nestjs/common';
import { AccessHook } from './access.hook';
import { ApiKeyResolver } from './api-key.resolver';
import { SessionTokenResolver } from '../connect/session-token.resolver';
import { AccountRateLimiter } from './rate-limiter';
import { ConsoleCredentialsAudit } from '../console/console-auth.audit';
import { ConsoleSessionResolver } from '../console/console-auth.session';

@Global()
@Module({
  providers: [
    AccessHook,
    ApiKeyResolver,
    AccountRateLimiter,
    SessionTokenResolver,
    ConsoleSessionResolver,
    ConsoleCredentialsAudit,
  ],
  exports: [AccessHook, AccountRateLimiter, ConsoleSessionResolver, ConsoleCredentialsAudit],
})
export class AccessModule {}
