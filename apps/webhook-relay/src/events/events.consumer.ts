import {
  Inject,
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import {
  asyncActionEventSchema,
  authEventSchema,
  EVENT_CONSUMERS,
  EVENT_STREAM,
  EVENT_SUBJECTS,
  jsonDepthExceeds,
  jsonTooDeepMessage,
  MESSAGE_JSON_MAX_DEPTH,
  providerWebhookEventSchema,
  SwitchboardError,
  syncEventSchema,
  type WebhookEventType,
} from '@switchboard/contracts';
import { CryptoError } from '@switchboard/crypto';
import {
  ensureDurableConsumer,
  ensureEventStream,
  streamBudgetOf,
  eventTraceContext,
  NATS_CONNECTION,
} from '@switchboard/messaging';
import { context } from '@switchboard/observability';
import { HealthRegistry } from '@switchboard/service-kit';
import type { ConsumerMessages, JsMsg, NatsConnection } from 'nats';
import type { z } from 'zod';
import { WEBHOOK_RELAY_ENV, type WebhookRelayEnv } from '../config/env';
import { DeliveriesRepository, type NewDelivery } from '../dispatch/deliveries.repository';
import { AttemptLog } from '../dispatch/attempt-log';
import { recordDropped } from '../metrics';
import { Dispatcher, type FirstAttempt } from '../dispatch/dispatcher';
import { EventPlanner } from './event-planner';

interface Subscription<S extends z.ZodType> {
  /** What the delivery log calls the event's deliveries (and its dead letter). */
  type: WebhookEventType;
  durable: string;
  subject: string;
  schema: S;
  plan: (event: z.infer<S>) => Promise<NewDelivery[]>;
}

const MAX_IN_FLIGHT = 64;

/**
 * Reads the events the relay turns into deliveries, one durable JetStream consumer per subject (shared by
 * every relay replica). A message is acknowledged only after its deliveries are committed to Postgres:
 * a relay killed before that leaves the message unacknowledged, and JetStream hands it out again after
 * the ack wait. Re-processing is harmless because a delivery is stored once per (webhook id, URL).
 */
@Injectable()
export class EventsConsumer
  implements OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown
{
  private readonly logger = new Logger('EventsConsumer');
  private readonly running: ConsumerMessages[] = [];
  private ready = false;
  private inFlight = 0;
  private readonly waiters: (() => void)[] = [];
  private readonly attemptLog: AttemptLog;
  /** Events whose first attempts are still out, with when that began (kept alive towards JetStream). */
  private readonly outstanding = new Map<JsMsg, number>();
  private keepAlive: NodeJS.Timeout | undefined;
  /** Set by a graceful stop: events taken from now on are handed back (nak), not started. */
  private stopping = false;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    private readonly planner: EventPlanner,
    private readonly repository: DeliveriesRepository,
    private readonly dispatcher: Dispatcher,
    private readonly health: HealthRegistry,
    @Inject(WEBHOOK_RELAY_ENV) private readonly env: WebhookRelayEnv,
  ) {
    this.attemptLog = new AttemptLog(repository);
  }

  async onApplicationBootstrap(): Promise<void> {
    this.health.register({
      name: 'event-consumers',
      readinessOnly: true,
      check: async () =>
        this.ready ? { ok: true } : { ok: false, detail: 'JetStream consumers not started' },
    });
    await ensureEventStream(this.nc, streamBudgetOf(this.env));
    const subscriptions: Subscription<z.ZodType>[] = [
      this.subscription('auth', EVENT_CONSUMERS.relayAuth, EVENT_SUBJECTS.auth, authEventSchema, (e) =>
        this.planner.planAuth(e),
      ),
      this.subscription(
        'forward',
        EVENT_CONSUMERS.relayProviderWebhook,
        EVENT_SUBJECTS.providerWebhook,
        providerWebhookEventSchema,
        (e) => this.planner.planProviderWebhook(e),
      ),
      this.subscription('sync', EVENT_CONSUMERS.relaySync, EVENT_SUBJECTS.sync, syncEventSchema, (e) =>
        this.planner.planSync(e),
      ),
      this.subscription(
        'async_action',
        EVENT_CONSUMERS.relayAsyncAction,
        EVENT_SUBJECTS.asyncAction,
        asyncActionEventSchema,
        (e) => this.planner.planAsyncAction(e),
      ),
    ];
    for (const subscription of subscriptions) await this.start(subscription);
    // A receiver may take longer to answer than JetStream waits for an ack: say we are still working.
    const every = Math.max(100, Math.floor(this.env.SWITCHBOARD_WEBHOOK_ACK_WAIT / 3));
    this.keepAlive = setInterval(() => {
      const due = Date.now() - every;
      for (const [message, since] of this.outstanding) if (since <= due) message.working();
    }, every);
    this.keepAlive.unref();
    this.ready = true;
  }

  /**
   * A graceful stop (a rolling deploy's SIGTERM), while Postgres and NATS are still open: no new event is
   * started (one already received goes back to JetStream at once rather than after the ack wait), and
   * those in hand finish — their first attempts answered, stored and acknowledged — so that JetStream does
   * not hand them to the next relay to be sent a second time; then the dispatcher's stored retries in
   * flight are answered and recorded, and no new one starts. Bounded by one attempt's
   * timeout and by 8 s (the process exits 10 s after the signal, service-kit's bootstrap); what is still
   * out then is redelivered, as after a crash.
   */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    // No more deliveries; those already here still pass through the loop, which hands them back.
    for (const messages of this.running) messages.stop();
    const deadline = Date.now() + Math.min(this.env.SWITCHBOARD_WEBHOOK_TIMEOUT + 2_000, 8_000);
    while ((this.inFlight > 0 || this.outstanding.size > 0) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // Then the stored retries out now: answered and recorded, none started after.
    await this.dispatcher.drain(deadline);
  }

  /** After the drain (the consumers are stopped there): the ack-wait keep-alive goes too. */
  onApplicationShutdown(): void {
    if (this.keepAlive) clearInterval(this.keepAlive);
  }

  /** Erases the event type once the schema and its handler are known to agree. */
  private subscription<S extends z.ZodType>(
    type: WebhookEventType,
    durable: string,
    subject: string,
    schema: S,
    plan: (event: z.infer<S>) => Promise<NewDelivery[]>,
  ): Subscription<z.ZodType> {
    return { type, durable, subject, schema, plan: plan as (event: unknown) => Promise<NewDelivery[]> };
  }

  private async start<S extends z.ZodType>(subscription: Subscription<S>): Promise<void> {
    const consumer = await ensureDurableConsumer(this.nc, {
      stream: EVENT_STREAM.name,
      durable: subscription.durable,
      subject: subscription.subject,
      // Events stored before the first relay ever started are delivered too.
      from: 'all',
      ackWaitMs: this.env.SWITCHBOARD_WEBHOOK_ACK_WAIT,
      // Messages waiting out a retry delay count as pending; keep room so they never starve new ones.
      maxAckPending: 20_000,
      // Bounded: an event failing on every try ends dead-lettered (see failed()), never retried forever.
      maxDeliver: this.env.SWITCHBOARD_EVENT_MAX_DELIVER,
    });
    const messages = await consumer.consume({ max_messages: 256 });
    this.running.push(messages);
    void (async () => {
      for await (const message of messages) {
        if (this.stopping) {
          // Taken but not started: back to JetStream at once (after a second, when this relay is gone),
          // not after the ack wait.
          message.nak(1_000);
          continue;
        }
        await this.slot();
        // Under the publisher's trace (the gateway's request, for a provider webhook): one trace per event,
        // and an event its publisher did not sample records no spans here either.
        void context
          .with(eventTraceContext(message.headers), () => this.handle(subscription, message))
          .finally(() => this.release());
      }
    })().catch((error: unknown) =>
      this.logger.error(`consumer ${subscription.durable} stopped: ${(error as Error).message}`),
    );
  }

  private async handle<S extends z.ZodType>(subscription: Subscription<S>, message: JsMsg): Promise<void> {
    let event: z.infer<S>;
    try {
      // Checked on the raw bytes first: parsing is safe, but walking 10,000 levels (validation) is not.
      if (jsonDepthExceeds(message.data, MESSAGE_JSON_MAX_DEPTH))
        throw new Error(jsonTooDeepMessage('The event', MESSAGE_JSON_MAX_DEPTH));
      const parsed = subscription.schema.safeParse(message.json());
      if (!parsed.success) throw new Error(parsed.error.message);
      event = parsed.data;
    } catch (error) {
      // A malformed event will never become valid: drop it loudly rather than block the consumer.
      recordDropped('malformed_event');
      this.logger.error(
        `dropping a malformed ${subscription.subject} event: ${(error as Error).message.slice(0, 500)}`,
      );
      message.term();
      return;
    }
    let deliveries: NewDelivery[];
    try {
      deliveries = await subscription.plan(event);
    } catch (error) {
      await this.failed(subscription, message, error, event);
      return;
    }
    if (deliveries.length === 0) {
      message.ack();
      return;
    }
    // First time this event is seen: send at once, store the outcomes after. Seen before (a crash or a
    // failed write meanwhile): rows may exist already, so go through Postgres, which sends a stored
    // delivery only while it is due.
    if (message.info.redeliveryCount <= 1) {
      const attempts: { delivery: NewDelivery; result: Promise<FirstAttempt | null> }[] = [];
      const waiting: NewDelivery[] = [];
      for (const delivery of deliveries) {
        delivery.eventCreatedAtMs = message.info.timestampNanos / 1e6;
        const result = this.dispatcher.sendFirst(delivery);
        if (result) attempts.push({ delivery, result });
        else waiting.push(delivery);
      }
      if (attempts.length > 0) {
        // The consumer slot is not held while receivers answer: a slow one must not stall the stream.
        void this.finishFirstAttempts(subscription, message, attempts, waiting, event);
        return;
      }
    }
    await this.storeAndSend(subscription, message, deliveries, event);
  }

  /** Waits for the first attempts, stores them with the deliveries that could not be sent, then acks. */
  private async finishFirstAttempts(
    subscription: Subscription<z.ZodType>,
    message: JsMsg,
    attempts: { delivery: NewDelivery; result: Promise<FirstAttempt | null> }[],
    waiting: NewDelivery[],
    event: unknown,
  ): Promise<void> {
    this.outstanding.set(message, Date.now());
    try {
      const outcomes = await Promise.allSettled(attempts.map((a) => a.result));
      const attempted: FirstAttempt[] = [];
      const unsent = [...waiting];
      outcomes.forEach((outcome, i) => {
        if (outcome.status === 'fulfilled') {
          // `null`: not sent (its endpoint's breaker opened while it waited for a slot); the poller sends it.
          if (outcome.value) attempted.push(outcome.value);
          else unsent.push(attempts[i]!.delivery);
        } else {
          // Unexpected (settings unreadable, …): store it for the poller, which will try again.
          this.logger.warn(
            `a first delivery attempt failed: ${(outcome.reason as Error)?.message ?? String(outcome.reason)}`,
          );
          unsent.push(attempts[i]!.delivery);
        }
      });
      await Promise.all([
        this.attemptLog.store(attempted),
        unsent.length > 0 ? this.repository.insert(unsent, null) : Promise.resolve([]),
      ]);
      message.ack();
      if (unsent.length > 0) this.dispatcher.kick();
      for (const { next } of attempted) if (next.nextAttemptAt) this.dispatcher.wakeAt(next.nextAttemptAt);
    } catch (error) {
      await this.failed(subscription, message, error, event);
    } finally {
      this.outstanding.delete(message);
    }
  }

  /** Stores the deliveries, leased to this process when it has room, acks, then sends the leased ones. */
  private async storeAndSend(
    subscription: Subscription<z.ZodType>,
    message: JsMsg,
    deliveries: NewDelivery[],
    event: unknown,
  ): Promise<void> {
    let reserved = 0;
    try {
      reserved = this.dispatcher.reserve(deliveries.length) ? deliveries.length : 0;
      const leased = await this.repository.insert(deliveries, reserved > 0 ? this.dispatcher.leaseMs : null);
      message.ack();
      this.dispatcher.dispatchLeased(leased, reserved);
      reserved = 0;
      if (leased.length < deliveries.length) this.dispatcher.kick();
    } catch (error) {
      if (reserved > 0) this.dispatcher.cancelReservation(reserved);
      await this.failed(subscription, message, error, event);
    }
  }

  /**
   * An event that could not be planned or stored. A permanent failure (the signing key cannot be
   * decrypted, a provider webhook nesting too deep, a stack overflow) and the last of
   * `SWITCHBOARD_EVENT_MAX_DELIVER` tries end the event: a `dead_lettered` row in the delivery log, then
   * `term` so JetStream never hands it out again. Anything else is retried with a growing delay.
   */
  private async failed(
    subscription: Subscription<z.ZodType>,
    message: JsMsg,
    error: unknown,
    event: unknown,
  ): Promise<void> {
    const attempt = message.info.redeliveryCount;
    const permanent =
      error instanceof CryptoError ||
      error instanceof RangeError ||
      (error instanceof SwitchboardError && error.code === 'invalid_body');
    if (permanent || attempt >= this.env.SWITCHBOARD_EVENT_MAX_DELIVER) {
      let reason: string;
      if (error instanceof CryptoError) {
        // The environment's signing key cannot be read with this deployment's master keys: retrying
        // cannot help, and waiting messages would hold back everyone else's.
        recordDropped('undecryptable_key');
        reason = "the environment's signing key cannot be decrypted";
      } else {
        recordDropped(permanent ? 'malformed_event' : 'exhausted');
        const why = error instanceof Error ? error.message : String(error);
        reason = permanent ? why : `not processed after ${attempt} tries: ${why}`;
      }
      reason = reason.slice(0, 500);
      this.logger.error(`dead-lettering a ${subscription.subject} event: ${reason}`);
      const ref = event as {
        id?: string;
        environmentId?: number;
        providerConfigKey?: string | null;
        connectionId?: string | null;
      };
      if (typeof ref.id === 'string' && typeof ref.environmentId === 'number') {
        try {
          await this.repository.deadLetter({
            environmentId: ref.environmentId,
            eventId: ref.id,
            type: subscription.type,
            connectionId: ref.connectionId ?? null,
            providerConfigKey: ref.providerConfigKey ?? null,
            reason,
            tries: attempt,
          });
        } catch (writeError) {
          if (attempt < this.env.SWITCHBOARD_EVENT_MAX_DELIVER) {
            // Not in the log yet: try again later rather than lose it silently.
            message.nak(Math.min(300_000, 1000 * 2 ** Math.min(attempt, 9)));
            return;
          }
          this.logger.error(`could not record a dead letter: ${(writeError as Error).message}`);
        }
      }
      message.term();
      return;
    }
    const delay = Math.min(300_000, 1000 * 2 ** Math.min(attempt, 9));
    this.logger.warn(
      `${subscription.subject} event not processed (try ${attempt}), retrying in ${delay} ms: ${(error as Error).message}`,
    );
    message.nak(delay);
  }

  private async slot(): Promise<void> {
    if (this.inFlight < MAX_IN_FLIGHT) {
      this.inFlight += 1;
      return;
    }
    await new Promise<void>((resolve) => this.waiters.push(resolve));
    this.inFlight += 1;
  }

  private release(): void {
    this.inFlight -= 1;
    this.waiters.shift()?.();
  }
}
