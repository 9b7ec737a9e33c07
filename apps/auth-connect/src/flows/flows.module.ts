import { Module } from '@nestjs/common';
import { ConnectSessionsModule } from '../connect-sessions/connect-sessions.module';
import { AuthorizationUrls } from './authorization-urls';
import { CallbackExchanges } from './callback-exchanges';
import { CompletionService } from './completion.service';
import { FlowContextService } from './flow-context.service';
import { FlowsHandlers } from './flows.handlers';
import { FormFlowsService } from './form-flows.service';
import { RedirectFlowsService } from './redirect-flows.service';

@Module({
  imports: [ConnectSessionsModule],
  controllers: [FlowsHandlers],
  providers: [
    FlowContextService,
    CompletionService,
    FormFlowsService,
    AuthorizationUrls,
    CallbackExchanges,
    RedirectFlowsService,
  ],
})
export class FlowsModule {}
