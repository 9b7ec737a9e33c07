import { createHash, randomUUID } from 'node:crypto';
import { FUNCTIONS_SUBJECTS, type Caller } from '@switchboard/contracts';
import type { Stack } from '@switchboard/testing';
import { connect } from 'nats';
import { Client } from 'pg';

/** The caller of the stack's environment, as the services pass it to each other, read from its row. */
export async function callerOf(db: Client, environmentUuid: string): Promise<Caller> {
  const env = (
    await db.query<{ id: number; account_id: number; name: string }>(
      'SELECT id, account_id, name FROM auth.environments WHERE uuid = $1',
      [environmentUuid],
    )
  ).rows[0]!;
  return {
    accountId: env.account_id,
    environmentId: env.id,
    environmentUuid,
    environmentName: env.name,
  };
}

/** Runs action scripts on the stack's functions-runtime; `close` lets go of its NATS connection. */
export interface ScriptRunner {
  /** Runs `body` as the `exec` of an action on the runner's connection; answers the run's result. */
  run(body: string): Promise<unknown>;
  close(): Promise<void>;
}

/**
 * Runs action bundles on functions-runtime as the orchestrator asks for them (`FUNCTIONS_SUBJECTS.run` over
 * NATS, in the environment of the stack's secret key), on `connection`: what a deployed action would do,
 * without deploying one.
 */
export async function openScriptRunner(
  stack: Stack,
  connection: { connectionId: string; providerConfigKey: string; provider: string },
): Promise<ScriptRunner> {
  const db = new Client({ connectionString: stack.databaseUrl });
  await db.connect();
  let caller: Caller;
  try {
    caller = await callerOf(db, stack.environmentUuid);
  } finally {
    await db.end();
  }
  const nc = await connect({ servers: stack.natsUrl });
  return {
    run: async (body) => {
      const code = `"use strict"; module.exports = { default: { type: "action", exec: async (nango) => { ${body} } } };`;
      const request = {
        caller,
        invocationId: randomUUID(),
        function: {
          id: 'fn-sync-control',
          name: 'sync-control',
          type: 'action',
          version: '0.0.1',
          codeSha256: createHash('sha256').update(code).digest('hex'),
          code,
        },
        connection,
        input: {},
        attempt: 1,
        depth: 0,
        limits: {},
      };
      const msg = await nc.request(
        FUNCTIONS_SUBJECTS.run,
        JSON.stringify({ pattern: FUNCTIONS_SUBJECTS.run, id: randomUUID(), data: request }),
        { timeout: 60_000 },
      );
      return (JSON.parse(Buffer.from(msg.data).toString('utf8')) as { response: { data: unknown } }).response
        .data;
    },
    close: () => nc.close(),
  };
}
