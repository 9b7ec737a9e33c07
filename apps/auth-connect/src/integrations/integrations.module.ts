import { Module } from '@nestjs/common';
import { IntegrationResolveHandlers } from './integration-resolve.handlers';
import { IntegrationsHandlers } from './integrations.handlers';
import { IntegrationsService } from './integrations.service';

@Module({
  controllers: [IntegrationsHandlers, IntegrationResolveHandlers],
  providers: [IntegrationsService],
  exports: [IntegrationsService],
})
export class IntegrationsModule {}
