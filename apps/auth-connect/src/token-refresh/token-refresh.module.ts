import { Module } from '@nestjs/common';
import { IntegrationsModule } from '../integrations/integrations.module';
import { TokenRefreshHandlers } from './token-refresh.handlers';
import { TokenRefreshService } from './token-refresh.service';

@Module({
  imports: [IntegrationsModule],
  controllers: [TokenRefreshHandlers],
  providers: [TokenRefreshService],
})
export class TokenRefreshModule {}
