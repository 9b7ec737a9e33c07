import { randomBytes, randomUUID } from 'node:crypto';
import type { Nango } from '@nangohq/node';
import { RECORDS_SUBJECTS, type Caller } from '@switchboard/contracts';
import type { Stack } from '@switchboard/testing';
import { connect, type NatsConnection } from 'nats';
import { Client } from 'pg';
import { call } from './http';
import { callerOf } from './script-runs';

/** A connection with a sync run in progress, whose records a test saves as the run's script would. */
export interface RecordsRun {
  caller: Caller;
  runId: string;
  /** The stack's database (for checks and for damaging rows on purpose). */
  db: Client;
  /** Saves records as a sync script's batchSave does (`orchestrator.v1.records.write`, fenced by the run). */
  save(model: string, records: Record<string, unknown>[]): Promise<void>;
  close(): Promise<void>;
}

/**
 * Creates the integration `integration` (provider `anthropic`) and an API-key connection `connectionId`
 * through the public API, then records a running sync `syncName` for it in the orchestrator's tables, as
 * the orchestrator does when it starts a run: the run's writes are let through by its fence. Records then
 * reach the store without a deployed script.
 */
export async function openRecordsRun(
  stack: Stack,
  nango: Nango,
  options: { integration: string; connectionId: string; syncName: string },
): Promise<RecordsRun> {
  const { integration, connectionId, syncName } = options;
  const db = new Client({ connectionString: stack.databaseUrl });
  await db.connect();
  const nc: NatsConnection = await connect({ servers: stack.natsUrl });
  const caller = await callerOf(db, stack.environmentUuid);
  await nango.createIntegration({ provider: 'anthropic', unique_key: integration });
  const res = await call(stack.gatewayUrl, 'POST', '/connections', {
    key: stack.secretKey,
    body: {
      provider_config_key: integration,
      connection_id: connectionId,
      credentials: { type: 'API_KEY', apiKey: `key_${randomBytes(8).toString('hex')}` },
    },
  });
  if (res.status !== 201) throw new Error(`POST /connections answered ${res.status}`);
  const sync = await db.query<{ id: string }>(
    `INSERT INTO orchestrator.syncs (id, environment_id, provider_config_key, connection_id, name, variant, updated_at)
     VALUES ($1, $2, $3, $4, $5, 'base', now()) RETURNING id`,
    [randomUUID(), caller.environmentId, integration, connectionId, syncName],
  );
  const runId = randomUUID();
  await db.query(
    `INSERT INTO orchestrator.sync_runs (id, sync_id, status, type, workflow_id, attempts)
     VALUES ($1, $2, 'RUNNING', 'INCREMENTAL', $3, 1)`,
    [runId, sync.rows[0]!.id, `${syncName}-e2e`],
  );
  return {
    caller,
    runId,
    db,
    save: async (model, records) => {
      const msg = await nc.request(
        RECORDS_SUBJECTS.write,
        JSON.stringify({
          pattern: RECORDS_SUBJECTS.write,
          id: randomUUID(),
          data: { caller, providerConfigKey: integration, connectionId, runId, model, op: 'save', records },
        }),
        { timeout: 30_000 },
      );
      const reply = JSON.parse(Buffer.from(msg.data).toString('utf8')) as { response?: { ok: boolean } };
      if (reply.response?.ok !== true) throw new Error(`records.write failed: ${JSON.stringify(reply)}`);
    },
    close: async () => {
      await nc.close();
      await db.end();
    },
  };
}
