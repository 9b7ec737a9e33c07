import { Module } from '@nestjs/common';
import { ConnectSessionsHandlers } from './connect-sessions.handlers';
import { ConnectSessionsService } from './connect-sessions.service';

@Module({
  controllers: [ConnectSessionsHandlers],
  providers: [ConnectSessionsService],
  exports: [ConnectSessionsService],
})
export class ConnectSessionsModule {}
