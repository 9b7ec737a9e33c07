import type { Stack } from '@switchboard/testing';
import { connect } from 'nats';
import { Client as PgClient } from 'pg';
import { EVENT_CONSUMERS, EVENT_STREAM } from '@switchboard/contracts';
import { call } from './http';
import { waitFor } from './processes';

/*
 * Barriers for negative assertions: instead of waiting a fixed time for something that must not happen,
 * wait for something observable that proves the system has handled what it would have acted on.
 */

/**
 * Waits until a durable consumer of the event stream has nothing pending and nothing unacknowledged: every
 * event published before the call has been handled (and acknowledged) by the service reading it.
 */
export async function consumerDrained(natsUrl: string, consumer: string, timeoutMs = 60_000): Promise<void> {
  const nc = await connect({ servers: natsUrl });
  try {
    const jsm = await nc.jetstreamManager();
    await waitFor(
      `the consumer ${consumer} to handle every event`,
      async () => {
        const info = await jsm.consumers.info(EVENT_STREAM.name, consumer);
        return info.num_pending === 0 && info.num_ack_pending === 0 ? true : undefined;
      },
      timeoutMs,
      50,
    );
  } finally {
    await nc.close();
  }
}

/**
 * Waits until the vault's outbox holds no event: every event recorded with a change the vault made before
 * the call (in the same transaction) has been published to the event stream.
 */
export async function outboxEmpty(databaseUrl: string, timeoutMs = 30_000): Promise<void> {
  const db = new PgClient({ connectionString: databaseUrl });
  await db.connect();
  try {
    await waitFor(
      'the vault to publish its outbox',
      async () => {
        const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM vault.outbox_events');
        return rows[0]!.n === 0 ? true : undefined;
      },
      timeoutMs,
      50,
    );
  } finally {
    await db.end();
  }
}

/**
 * The function runs functions-runtime has finished so far, in order (`<type> <name> (<invocation>): <outcome>`).
 * Read from its log because nothing else sees a stopped run end: the runtime answers its caller on a private
 * inbox, and a run whose workflow was terminated has no caller left to record the end in a row or an event.
 */
export function finishedRuns(stack: Pick<Stack, 'logs'>): string[] {
  return [
    ...stack
      .logs('functions-runtime')
      .matchAll(/\b(?:sync|action|on-event) \S+ \([^)]+\): (?:success|failure[^\n]*?) in \d+ ms/g),
  ].map((m) => m[0]);
}

/**
 * Waits until functions-runtime has finished a run that failed (stopped, aborted or refused) since `since`
 * (a count of `finishedRuns`): the script that run was is over, it asks for nothing more. With `runId`
 * (see `runningSyncRun`), only that run's end counts: another run failing meanwhile proves nothing.
 */
export async function runFailedSince(
  stack: Pick<Stack, 'logs'>,
  since: number,
  { runId, timeoutMs = 60_000 }: { runId?: string; timeoutMs?: number } = {},
): Promise<string> {
  return waitFor(
    runId ? `the run ${runId} to end as a failure` : 'a stopped run to end',
    async () =>
      finishedRuns(stack)
        .slice(since)
        .find((line) => /\): failure/.test(line) && (!runId || line.includes(`(${runId}):`))),
    timeoutMs,
    50,
  );
}

/** The id of the latest sync run in progress for a connection (the invocation functions-runtime logs it under). */
export async function runningSyncRun(databaseUrl: string, connectionId: string): Promise<string> {
  const db = new PgClient({ connectionString: databaseUrl });
  await db.connect();
  try {
    const { rows } = await db.query<{ id: string }>(
      `SELECT r.id FROM orchestrator.sync_runs r JOIN orchestrator.syncs s ON s.id = r.sync_id
        WHERE s.connection_id = $1 AND r.status = 'RUNNING' ORDER BY r.started_at DESC LIMIT 1`,
      [connectionId],
    );
    if (rows.length === 0) throw new Error(`no run in progress for ${connectionId}`);
    return rows[0]!.id;
  } finally {
    await db.end();
  }
}

/**
 * Waits until the environment of `key` (the stack's own by default) has no webhook delivery pending: every
 * delivery the relay planned has been sent (or given up on).
 */
export async function noDeliveryPending(
  stack: Pick<Stack, 'gatewayUrl' | 'secretKey'>,
  key = stack.secretKey,
  timeoutMs = 60_000,
): Promise<void> {
  await waitFor(
    'every webhook delivery to be sent',
    async () => {
      const pending = await call(
        stack.gatewayUrl,
        'GET',
        '/environment/webhook-deliveries?status=pending&limit=1',
        {
          key,
        },
      );
      if (pending.status !== 200) throw new Error(`deliveries answered ${pending.status}`);
      return (pending.body as { data: unknown[] }).data.length === 0 ? true : undefined;
    },
    timeoutMs,
    100,
  );
}

/**
 * Waits until every auth webhook (connection created, overridden, refreshed...) the stack had cause to send
 * has been sent: the vault's outbox is published, the relay has handled every auth event, and no delivery
 * is pending. A webhook not received by then is one that was never planned.
 */
export async function authWebhooksSettled(
  stack: Pick<Stack, 'gatewayUrl' | 'secretKey' | 'natsUrl' | 'databaseUrl'>,
): Promise<void> {
  await outboxEmpty(stack.databaseUrl);
  await consumerDrained(stack.natsUrl, EVENT_CONSUMERS.relayAuth);
  await noDeliveryPending(stack);
}

/**
 * Waits until every provider webhook received so far has been handled by the relay (forwarded, or stored
 * without a forward) and no delivery is pending: a forward not received by then is one that was never planned.
 */
export async function providerWebhooksSettled(
  stack: Pick<Stack, 'gatewayUrl' | 'secretKey' | 'natsUrl'>,
): Promise<void> {
  await consumerDrained(stack.natsUrl, EVENT_CONSUMERS.relayProviderWebhook);
  await noDeliveryPending(stack);
}
