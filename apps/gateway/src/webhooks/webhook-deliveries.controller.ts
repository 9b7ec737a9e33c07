import { Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import {
  deliveryIdParamsSchema,
  listDeliveriesQuerySchema,
  type Caller as CallerType,
  type DeliveryPage,
  type WebhookDelivery,
  type WebhookDeliveryDetail,
  WEBHOOK_REQUESTS,
} from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import { Caller } from '../access/caller.decorator';
import { RequireScope } from '../access/route-access';
import { createZodDto } from 'nestjs-zod';
import { NoQuery } from '../http/validation';

class ListDeliveriesQueryDto extends createZodDto(listDeliveriesQuerySchema) {}
class DeliveryIdParamsDto extends createZodDto(deliveryIdParamsSchema) {}

/** The environment's webhook delivery log (newest first) and redelivery. */
@Controller('environment/webhook-deliveries')
export class WebhookDeliveriesController {
  constructor(private readonly nats: NatsRequester) {}

  @Get()
  @RequireScope('environment:webhooks:read')
  async list(@Caller() caller: CallerType, @Query() query: ListDeliveriesQueryDto): Promise<DeliveryPage> {
    return this.nats.call(WEBHOOK_REQUESTS.listDeliveries, { environmentId: caller.environmentId, query });
  }

  @Get(':id')
  @RequireScope('environment:webhooks:read')
  async get(
    @Caller() caller: CallerType,
    @Query() _query: NoQuery,
    @Param() { id }: DeliveryIdParamsDto,
  ): Promise<{ data: WebhookDeliveryDetail }> {
    return {
      data: await this.nats.call(WEBHOOK_REQUESTS.getDelivery, {
        environmentId: caller.environmentId,
        id,
      }),
    };
  }

  /** Queues the delivery again now (same `webhook-id`); answers 202 with its new state. */
  @Post(':id/redeliver')
  @HttpCode(202)
  @RequireScope('environment:webhooks:write')
  async redeliver(
    @Caller() caller: CallerType,
    @Query() _query: NoQuery,
    @Param() { id }: DeliveryIdParamsDto,
  ): Promise<{ data: WebhookDelivery }> {
    return {
      data: await this.nats.call(WEBHOOK_REQUESTS.redeliver, {
        environmentId: caller.environmentId,
        id,
      }),
    };
  }
}
