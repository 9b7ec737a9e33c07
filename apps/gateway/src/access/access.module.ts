import { Global, Module } from '@nestjs/common';
import { AccessHook } from './access.hook';
import { ApiKeyResolver } from './api-key.resolver';
import { SessionTokenResolver } from '../connect/session-token.resolver';
import { AccountRateLimiter } from './rate-limiter';

@Global()
@Module({
  providers: [AccessHook, ApiKeyResolver, AccountRateLimiter, SessionTokenResolver],
  exports: [AccessHook],
})
export class AccessModule {}
