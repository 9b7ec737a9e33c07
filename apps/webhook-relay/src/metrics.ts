import { AttributeSets, LAG_BUCKETS_S, meterFor } from '@switchboard/observability';

const meter = meterFor('@switchboard/webhook-relay');

/**
 * `switchboard.webhook.delivery.lag`: from the event's creation (its JetStream publish time for a first
 * attempt; the delivery row's creation, when the event was consumed, for a stored one) to the receiver's
 * 2xx. Retries and breaker waits show up here, not in the attempt's own duration.
 */
const lag = meter.createHistogram('switchboard.webhook.delivery.lag', {
  description: 'Time from an event to its successful delivery',
  unit: 's',
  advice: { explicitBucketBoundaries: LAG_BUCKETS_S },
});

/** `switchboard.webhook.delivery.attempts`: attempts by what follows (`delivered`, `pending` = retry, `failed`, `endpoint_disabled`). */
const attempts = meter.createCounter('switchboard.webhook.delivery.attempts', {
  description: 'Webhook delivery attempts, by outcome',
});

/**
 * `switchboard.webhook.dropped`: what is refused or dropped rather than attempted: `breaker_open` (the
 * attempt waits for the breaker's cooldown), `malformed_event`, `undecryptable_key`, `endpoint_disabled`.
 */
const dropped = meter.createCounter('switchboard.webhook.dropped', {
  description: 'Webhook deliveries or events refused, postponed or dropped, by reason',
});

const outcomes = new AttributeSets(16);
const reasons = new AttributeSets(16);

export function recordAttempt(outcome: string, eventCreatedAtMs: number | undefined): void {
  attempts.add(
    1,
    outcomes.get(outcome, () => ({ 'switchboard.webhook.outcome': outcome })),
  );
  if (outcome === 'delivered' && eventCreatedAtMs !== undefined)
    lag.record(Math.max(0, Date.now() - eventCreatedAtMs) / 1000);
}

export function recordDropped(reason: string): void {
  dropped.add(
    1,
    reasons.get(reason, () => ({ 'switchboard.webhook.reason': reason })),
  );
}

/**
 * `switchboard.webhook.breakers`: this process's circuit breakers by state (`open`, `half_open`), read at
 * each collection from the breakers themselves.
 */
export function observeBreakers(read: () => { open: number; halfOpen: number }): void {
  const openSet = { 'switchboard.webhook.breaker.state': 'open' };
  const halfOpenSet = { 'switchboard.webhook.breaker.state': 'half_open' };
  meter
    .createObservableGauge('switchboard.webhook.breakers', {
      description: 'Webhook endpoint circuit breakers currently open or half-open (this process)',
    })
    .addCallback((result) => {
      const { open, halfOpen } = read();
      result.observe(open, openSet);
      result.observe(halfOpen, halfOpenSet);
    });
}
