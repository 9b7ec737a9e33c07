import { EVENT_STREAM, EVENT_SUBJECTS, type AuthEvent } from '@switchboard/contracts';
import { DeliverPolicy, type NatsConnection } from 'nats';

/**
 * The auth events stored on the JetStream stream since `since`, read with a throwaway ordered consumer
 * (it acks nothing and takes nothing away from the webhook relay's own consumer).
 */
export async function authEventsSince(nc: NatsConnection, since: Date): Promise<AuthEvent[]> {
  const consumer = await nc.jetstream().consumers.get(EVENT_STREAM.name, {
    filterSubjects: EVENT_SUBJECTS.auth,
    deliver_policy: DeliverPolicy.StartTime,
    opt_start_time: since.toISOString(),
  });
  const events: AuthEvent[] = [];
  for (;;) {
    const batch = await consumer.fetch({ max_messages: 500, expires: 1000 });
    let got = 0;
    for await (const msg of batch) {
      got++;
      events.push(msg.json<AuthEvent>());
    }
    if (got === 0) return events;
  }
}

/** Waits until `predicate` holds for the events so far (events are published right after the write). */
export async function waitForAuthEvents(
  nc: NatsConnection,
  since: Date,
  predicate: (events: AuthEvent[]) => boolean,
  timeoutMs = 10_000,
): Promise<AuthEvent[]> {
  const deadline = Date.now() + timeoutMs;
  let events: AuthEvent[] = [];
  while (Date.now() < deadline) {
    events = await authEventsSince(nc, since);
    if (predicate(events)) return events;
    await new Promise((r) => setTimeout(r, 200));
  }
  return events;
}
