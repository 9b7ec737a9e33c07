import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { CryptoError } from '@switchboard/crypto';
import { WEBHOOK_RELAY_ENV, type WebhookRelayEnv } from '../config/env';
import { EgressPolicy } from '@switchboard/egress';
import { SettingsService } from '../settings/settings.service';
import { signDelivery } from '../signing/webhook-signer';
import { observeBreakers, recordAttempt, recordDropped } from '../metrics';
import { CircuitBreakers } from './circuit-breaker';
import {
  DeliveriesRepository,
  type AttemptRecord,
  type ClaimedDelivery,
  type NewDelivery,
  type NextState,
} from './deliveries.repository';
import { HttpSender, type SendOutcome } from './http-sender';
import { nextAttempt, parseRetryAfter } from './retry-schedule';

const USER_AGENT = 'Switchboard-Webhooks/0.1 (+https://www.standardwebhooks.com)';
const PRUNE_EVERY_MS = 10 * 60_000;
/** How often the list of endpoints disabled (by any replica) is read again. */
const DISABLED_REFRESH_MS = 5_000;
/**
 * First attempts that may wait in memory for a free slot (the process's or the endpoint's concurrency)
 * rather than going through Postgres. Their events stay unacknowledged meanwhile, so a process killed
 * with some waiting loses nothing: JetStream hands the events out again.
 */
const MAX_WAITING_FIRST = 2_000;

interface AttemptDecision {
  attempt: AttemptRecord;
  next: NextState;
  /** Set when the answer disables the endpoint (410). */
  disableEndpoint?: string;
}

interface WaitingFirst {
  delivery: NewDelivery;
  resolve: (attempt: Promise<FirstAttempt | null>) => void;
}

/** A first attempt made straight from an event, with the row to store for it. */
export interface FirstAttempt extends AttemptDecision {
  delivery: NewDelivery;
}

/** Endpoints that answered 410, per environment: nothing more is sent to them. */
class DisabledEndpoints {
  private keys = new Set<string>();
  has(environmentId: number, url: string): boolean {
    return this.keys.size > 0 && this.keys.has(`${environmentId} ${url}`);
  }
  add(environmentId: number, url: string): void {
    this.keys.add(`${environmentId} ${url}`);
  }
  delete(environmentId: number, url: string): void {
    this.keys.delete(`${environmentId} ${url}`);
  }
  replace(rows: { environmentId: number; url: string }[]): void {
    this.keys = new Set(rows.map((row) => `${row.environmentId} ${row.url}`));
  }
}

/**
 * Sends deliveries: the ones the event consumer just stored (at once, leased to this process) and the due
 * retries it finds by polling Postgres. Each attempt's outcome is written before the lease is released,
 * so a process killed at any moment leaves either a recorded attempt or a lease that expires and lets
 * any replica send again (same `webhook-id`: receivers dedupe on it).
 */
@Injectable()
export class Dispatcher implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Dispatcher');
  private readonly sender: HttpSender;
  private readonly breakers: CircuitBreakers;
  private readonly perEndpoint = new Map<string, number>();
  /** First attempts waiting for a slot, per URL, in arrival order. */
  private readonly waitingFirst = new Map<string, WaitingFirst[]>();
  private waitingCount = 0;
  private readonly disabled = new DisabledEndpoints();
  private disabledReadAt = 0;
  private nextPollAt = 0;
  /** The earliest wake-up asked for while a poll was running (epoch ms; Infinity when none). */
  private wakeupAt = Number.POSITIVE_INFINITY;
  private inFlight = 0;
  private reserved = 0;
  private timer: NodeJS.Timeout | undefined;
  private pruneTimer: NodeJS.Timeout | undefined;
  private polling = false;
  private backlog = false;
  private pollAgain = false;
  private stopped = false;
  readonly leaseMs: number;

  constructor(
    private readonly repository: DeliveriesRepository,
    private readonly settings: SettingsService,
    egress: EgressPolicy,
    @Inject(WEBHOOK_RELAY_ENV) private readonly env: WebhookRelayEnv,
  ) {
    this.sender = new HttpSender(egress, env.SWITCHBOARD_WEBHOOK_TIMEOUT);
    this.breakers = new CircuitBreakers(
      env.SWITCHBOARD_WEBHOOK_BREAKER_FAILURES,
      env.SWITCHBOARD_WEBHOOK_BREAKER_WINDOW,
      env.SWITCHBOARD_WEBHOOK_BREAKER_COOLDOWN,
    );
    observeBreakers(() => this.breakers.counts());
    // Long enough for one attempt to finish and be recorded; short enough that a killed process's
    // deliveries are retaken quickly.
    this.leaseMs = env.SWITCHBOARD_WEBHOOK_TIMEOUT + Math.min(env.SWITCHBOARD_WEBHOOK_TIMEOUT, 5_000);
    settings.onEndpointsEnabled((environmentId, urls) => this.endpointEnabled(environmentId, urls));
  }

  onApplicationBootstrap(): void {
    this.schedulePoll(0);
    this.pruneTimer = setInterval(() => void this.prune(), PRUNE_EVERY_MS);
    this.pruneTimer.unref();
  }

  /**
   * A graceful stop's second half (EventsConsumer's drain calls it once no event is taken any more), while
   * Postgres is still open: no more polls, and the attempts already out (stored retries, and first
   * attempts) are answered and recorded by `deadline`, so that their leases do not run out and the next
   * relay does not send them a second time. What is still out then is retaken after its lease, as after a
   * crash.
   */
  async drain(deadline: number): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    while ((this.inFlight > 0 || this.polling) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    await this.sender.close();
  }

  /** Reserves capacity for deliveries about to be stored; false when this process is busy. */
  reserve(count: number): boolean {
    if (this.inFlight + this.reserved + count > this.env.SWITCHBOARD_WEBHOOK_CONCURRENCY) return false;
    this.reserved += count;
    return true;
  }

  /** Sends deliveries stored with a lease for this process (after `reserve`). */
  dispatchLeased(deliveries: ClaimedDelivery[], reservedCount: number): void {
    this.reserved -= reservedCount;
    for (const delivery of deliveries) this.start(delivery);
    if (this.waitingCount > 0) this.startWaiting();
  }

  cancelReservation(count: number): void {
    this.reserved -= count;
    if (this.waitingCount > 0) this.startWaiting();
  }

  /** An endpoint disabled by a 410 was enabled again (redelivery, or its URL set again). */
  endpointEnabled(environmentId: number, urls: string[]): void {
    for (const url of urls) this.disabled.delete(environmentId, url);
  }

  /** Looks for due work now (after a redelivery request, or deliveries stored without a lease). */
  kick(): void {
    this.backlog = true;
    this.schedulePoll(0);
  }

  private schedulePoll(delayMs: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.nextPollAt = Date.now() + delayMs;
    this.timer = setTimeout(() => void this.poll(), delayMs);
  }

  /** Makes sure the poller looks again by `at` (a retry this process just scheduled, a lease given back). */
  wakeAt(at: Date): void {
    const due = at.getTime();
    if (this.polling) {
      if (due <= Date.now()) this.pollAgain = true;
      else this.wakeupAt = Math.min(this.wakeupAt, due);
      return;
    }
    if (due < this.nextPollAt) this.schedulePoll(Math.max(0, due - Date.now()));
  }

  private takeWakeup(): number {
    const at = this.wakeupAt;
    this.wakeupAt = Number.POSITIVE_INFINITY;
    return at;
  }

  /**
   * How long to wait before the next poll when the last one found nothing: until the earliest stored
   * retry or open breaker comes due, at least the poll interval and at most the idle interval. An idle
   * relay then costs a query every few seconds rather than two a second; work this process creates
   * wakes it at once (`kick`, `wakeAt`), and work other replicas store waits at most the idle interval.
   */
  private async idleDelay(): Promise<number> {
    const now = Date.now();
    const candidates = [now + this.env.SWITCHBOARD_WEBHOOK_IDLE_POLL_INTERVAL, this.takeWakeup()];
    const due = await this.repository.nextDueAt();
    if (due) candidates.push(due.getTime());
    for (const url of this.breakers.openUrls()) candidates.push(this.breakers.openUntil(url));
    const next = Math.min(...candidates);
    return Math.max(this.env.SWITCHBOARD_WEBHOOK_POLL_INTERVAL, next - now);
  }

  private async poll(): Promise<void> {
    if (this.polling) {
      this.pollAgain = true;
      return;
    }
    this.polling = true;
    let idle = false;
    try {
      if (Date.now() - this.disabledReadAt > DISABLED_REFRESH_MS) {
        this.disabled.replace(await this.repository.disabledEndpoints());
        this.disabledReadAt = Date.now();
      }
      const free = this.env.SWITCHBOARD_WEBHOOK_CONCURRENCY - this.inFlight - this.reserved;
      if (free > 0) {
        const saturated = [...this.perEndpoint.entries()]
          .filter(([, count]) => count >= this.env.SWITCHBOARD_WEBHOOK_ENDPOINT_CONCURRENCY)
          .map(([url]) => url);
        const claimed = await this.repository.claimDue(free, this.leaseMs, [
          ...saturated,
          ...this.breakers.openUrls(),
        ]);
        for (const delivery of claimed) this.start(delivery);
        // A full batch means more is probably due: look again as soon as capacity frees up.
        this.backlog = claimed.length === free;
        idle = claimed.length === 0 && saturated.length === 0;
      } else {
        this.backlog = true;
      }
    } catch (error) {
      this.logger.warn(`polling for due deliveries failed: ${(error as Error).message}`);
    }
    let delay = this.env.SWITCHBOARD_WEBHOOK_POLL_INTERVAL;
    if (idle && !this.pollAgain) {
      try {
        delay = await this.idleDelay();
      } catch (error) {
        this.logger.warn(`looking for the next due delivery failed: ${(error as Error).message}`);
      }
    }
    this.polling = false;
    const again = this.pollAgain;
    this.pollAgain = false;
    const asked = this.takeWakeup();
    this.schedulePoll(again ? 0 : Math.max(0, Math.min(delay, asked - Date.now())));
  }

  private start(delivery: ClaimedDelivery): void {
    this.track(delivery.url, +1);
    void this.attempt(delivery)
      .catch((error: unknown) => {
        // The lease expires and the delivery is retried; nothing is lost.
        this.logger.error(`delivery ${delivery.id} could not be processed: ${(error as Error).message}`);
      })
      .finally(() => this.finished(delivery.url));
  }

  private track(url: string, delta: number): void {
    this.inFlight += delta;
    const count = (this.perEndpoint.get(url) ?? 0) + delta;
    if (count <= 0) this.perEndpoint.delete(url);
    else this.perEndpoint.set(url, count);
  }

  private hasRoom(url: string): boolean {
    return (
      this.inFlight + this.reserved < this.env.SWITCHBOARD_WEBHOOK_CONCURRENCY &&
      (this.perEndpoint.get(url) ?? 0) < this.env.SWITCHBOARD_WEBHOOK_ENDPOINT_CONCURRENCY
    );
  }

  /** Hands freed slots to the first attempts waiting for them, oldest first per URL. */
  private startWaiting(): void {
    for (const [url, queue] of this.waitingFirst) {
      while (queue.length > 0 && this.hasRoom(url)) {
        const next = queue.shift()!;
        this.waitingCount -= 1;
        next.resolve(
          this.disabled.has(next.delivery.environmentId, url)
            ? Promise.resolve(null)
            : this.firstAttempt(next.delivery),
        );
      }
      if (queue.length === 0) this.waitingFirst.delete(url);
      if (this.inFlight + this.reserved >= this.env.SWITCHBOARD_WEBHOOK_CONCURRENCY) return;
    }
  }

  private finished(url: string): void {
    this.track(url, -1);
    if (this.waitingCount > 0) this.startWaiting();
    // Only a known backlog is worth a query per finished attempt; otherwise the interval finds new work.
    if (this.backlog) {
      if (!this.polling) this.schedulePoll(0);
      else this.pollAgain = true;
    }
  }

  private async attempt(delivery: ClaimedDelivery): Promise<void> {
    if (delivery.endpointDisabled) {
      recordDropped('endpoint_disabled');
      await this.repository.skipDisabled(delivery);
      return;
    }
    if (!this.breakers.tryPass(delivery.url)) {
      recordDropped('breaker_open');
      const at = new Date(Math.max(this.breakers.openUntil(delivery.url), Date.now() + 100));
      await this.repository.release(delivery.id, at);
      this.wakeAt(at);
      return;
    }
    const decision = await this.sendAndDecide(delivery, delivery.attempts + 1);
    if (decision.disableEndpoint) await this.disableEndpoint(delivery, decision.disableEndpoint);
    await this.repository.recordAttempt(delivery, decision.attempt, decision.next);
    if (decision.next.nextAttemptAt) this.wakeAt(decision.next.nextAttemptAt);
  }

  /**
   * The first attempt of a delivery that is not stored yet, sent straight from its event: the receiver
   * gets it without waiting for Postgres, and the outcome is stored afterwards, in a batch, before the
   * event is acknowledged (a process killed meanwhile leaves the event unacknowledged; it is processed
   * again and the receiver may get the same `webhook-id` twice). When this process or the endpoint is at
   * its concurrency the attempt waits in memory for a slot (at most `MAX_WAITING_FIRST` of them), so a
   * burst costs no extra Postgres round trips. Returns `null`, sending nothing, when the delivery should
   * rather wait in Postgres: the endpoint is disabled or too many attempts wait already; the promise
   * resolves with `null` when the endpoint's breaker is open by the time a slot is free.
   */
  sendFirst(delivery: NewDelivery): Promise<FirstAttempt | null> | null {
    if (this.disabled.has(delivery.environmentId, delivery.url)) return null;
    if (this.hasRoom(delivery.url) && !this.waitingFirst.has(delivery.url))
      return this.firstAttempt(delivery);
    if (this.waitingCount >= MAX_WAITING_FIRST) return null;
    return new Promise<FirstAttempt | null>((resolve) => {
      let queue = this.waitingFirst.get(delivery.url);
      if (!queue) this.waitingFirst.set(delivery.url, (queue = []));
      queue.push({ delivery, resolve });
      this.waitingCount += 1;
    });
  }

  /** Takes a slot for the URL and sends; `null` when its breaker refuses the attempt. */
  private firstAttempt(delivery: NewDelivery): Promise<FirstAttempt | null> {
    if (!this.breakers.tryPass(delivery.url)) return Promise.resolve(null);
    this.track(delivery.url, +1);
    return this.sendAndDecide({ ...delivery, attempts: 0 }, 1)
      .then(async (decision) => {
        if (decision.disableEndpoint) await this.disableEndpoint(delivery, decision.disableEndpoint);
        return { delivery, ...decision };
      })
      .finally(() => this.finished(delivery.url));
  }

  /** Signs and sends one attempt and decides what follows from the answer; writes nothing. */
  private async sendAndDecide(
    delivery: Pick<
      ClaimedDelivery,
      'environmentId' | 'eventId' | 'url' | 'body' | 'headers' | 'attempts' | 'eventCreatedAtMs'
    >,
    attemptNumber: number,
  ): Promise<AttemptDecision> {
    let outcome: SendOutcome;
    const startedAt = new Date();
    try {
      const settings = await this.settings.forDelivery(delivery.environmentId, true);
      if (!settings) throw new Error('webhook settings vanished');
      const signed = signDelivery(delivery.body, delivery.eventId, settings.keys, startedAt);
      outcome = await this.sender.send(delivery.url, delivery.body, {
        ...delivery.headers,
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        ...signed,
      });
    } catch (error) {
      if (error instanceof CryptoError) {
        this.breakers.success(delivery.url);
        const message = 'the signing key cannot be decrypted with the configured master keys';
        this.logger.error(`a delivery of event ${delivery.eventId} failed: ${message}`);
        return {
          attempt: { startedAt, durationMs: 0, statusCode: null, error: message },
          next: { status: 'failed' },
        };
      }
      // Never leave a half-open breaker waiting for a probe that will not report.
      this.breakers.failure(delivery.url);
      throw error;
    }
    const decision = this.decide(attemptNumber, startedAt, delivery.url, outcome);
    recordAttempt(decision.next.status, delivery.eventCreatedAtMs);
    return decision;
  }

  private decide(attemptNumber: number, startedAt: Date, url: string, outcome: SendOutcome): AttemptDecision {
    const now = Date.now();
    const base = { startedAt, durationMs: outcome.durationMs };
    const retryOrFail = (
      statusCode: number | null,
      error: string | null,
      retryAfterMs?: number,
    ): AttemptDecision => {
      const decision = nextAttempt(
        this.env.SWITCHBOARD_WEBHOOK_RETRY_SCHEDULE,
        attemptNumber,
        now,
        retryAfterMs,
      );
      return {
        attempt: { ...base, statusCode, error },
        next: decision.retry ? { status: 'pending', nextAttemptAt: decision.at } : { status: 'failed' },
      };
    };

    switch (outcome.kind) {
      case 'response': {
        const { status } = outcome;
        if (status >= 200 && status < 300) {
          if (this.breakers.success(url)) this.recovered(url);
          return { attempt: { ...base, statusCode: status, error: null }, next: { status: 'delivered' } };
        }
        if (status === 410) {
          this.breakers.success(url);
          return {
            attempt: {
              ...base,
              statusCode: status,
              error: 'the endpoint answered 410 Gone and is now disabled',
            },
            next: { status: 'endpoint_disabled' },
            disableEndpoint: 'the endpoint answered 410 Gone',
          };
        }
        if (status >= 500 || status === 429 || status === 408) {
          this.breakers.failure(url);
          return retryOrFail(status, `HTTP ${status}`, parseRetryAfter(outcome.retryAfter, now));
        }
        // 3xx (redirects are not followed) and other 4xx: the receiver refused this message.
        this.breakers.success(url);
        return {
          attempt: { ...base, statusCode: status, error: `HTTP ${status}` },
          next: { status: 'failed' },
        };
      }
      case 'timeout':
        this.breakers.failure(url);
        return retryOrFail(null, `timed out after ${this.env.SWITCHBOARD_WEBHOOK_TIMEOUT} ms`);
      case 'network_error':
        this.breakers.failure(url);
        return retryOrFail(null, outcome.error);
      case 'refused':
        this.breakers.success(url);
        return { attempt: { ...base, statusCode: null, error: outcome.error }, next: { status: 'failed' } };
    }
  }

  /**
   * The endpoint answered after its breaker had opened: what waits for it is due now rather than at its
   * backed-off retry time (minutes, after a long outage), so the backlog drains as soon as the receiver is
   * back, at the endpoint's concurrency. A probe that fails keeps the schedule as it was.
   */
  private recovered(url: string): void {
    void this.repository.pullForward(url).then(
      (count) => {
        if (count === 0) return;
        this.logger.log(`an endpoint is reachable again: ${count} waiting deliveries are due now`);
        this.kick();
      },
      (error: unknown) =>
        this.logger.warn(
          `making the deliveries of a recovered endpoint due failed: ${(error as Error).message}`,
        ),
    );
  }

  private async disableEndpoint(
    delivery: { environmentId: number; url: string },
    reason: string,
  ): Promise<void> {
    this.disabled.add(delivery.environmentId, delivery.url);
    await this.repository.markEndpointDisabled(delivery, reason);
  }

  private async prune(): Promise<void> {
    try {
      const removed = await this.repository.prune(
        new Date(Date.now() - this.env.SWITCHBOARD_WEBHOOK_LOG_RETENTION),
      );
      if (removed > 0) this.logger.log(`pruned ${removed} finished deliveries from the log`);
    } catch (error) {
      this.logger.warn(`pruning the delivery log failed: ${(error as Error).message}`);
    }
  }
}
