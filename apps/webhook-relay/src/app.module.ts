import { Module, type DynamicModule } from '@nestjs/common';
import { EgressPolicy } from '@switchboard/egress';
import { ServiceKitModule } from '@switchboard/service-kit';
import { WEBHOOK_RELAY_ENV, type WebhookRelayEnv } from './config/env';
import { DatabaseModule } from './database/database.module';
import { DeliveriesHandlers } from './deliveries/deliveries.handlers';
import { DeliveriesRepository } from './dispatch/deliveries.repository';
import { Dispatcher } from './dispatch/dispatcher';
import { EnvironmentDirectory } from '@switchboard/webhook-ingress';
import { EventPlanner } from './events/event-planner';
import { EventsConsumer } from './events/events.consumer';
import { IngressHandlers } from './ingress/ingress.handlers';
import { IngressService } from './ingress/ingress.service';
import { SettingsHandlers } from './settings/settings.handlers';
import { SettingsService } from './settings/settings.service';

@Module({})
export class AppModule {
  static forRoot(env: WebhookRelayEnv): DynamicModule {
    return {
      module: AppModule,
      global: true,
      imports: [ServiceKitModule.forRoot({ name: 'webhook-relay', nats: env }), DatabaseModule],
      controllers: [SettingsHandlers, IngressHandlers, DeliveriesHandlers],
      providers: [
        { provide: WEBHOOK_RELAY_ENV, useValue: env },
        {
          provide: EgressPolicy,
          useValue: EgressPolicy.forTraffic(
            'SWITCHBOARD_WEBHOOK_EGRESS_ALLOW',
            env.SWITCHBOARD_WEBHOOK_EGRESS_ALLOW,
            [env.SWITCHBOARD_EGRESS_ALLOW, env.SWITCHBOARD_EGRESS_ALLOWED_CIDRS].join(','),
          ),
        },
        EnvironmentDirectory,
        SettingsService,
        IngressService,
        DeliveriesRepository,
        Dispatcher,
        EventPlanner,
        EventsConsumer,
      ],
      exports: [WEBHOOK_RELAY_ENV],
    };
  }
}
