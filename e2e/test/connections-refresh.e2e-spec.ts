import { randomUUID } from 'node:crypto';
import { Nango } from '@nangohq/node';
import {
  healthSubject,
  VAULT_SUBJECTS,
  type AuthEvent,
  type ConnectionCredentials,
} from '@switchboard/contracts';
import { freePort, startStack, type RunningService, type Stack } from '@switchboard/testing';
import { connect, JSONCodec, type NatsConnection } from 'nats';
import { Client } from 'pg';
import { authEventsSince } from './support/auth-events';
import { outboxEmpty } from './support/barriers';
import {
  fakeOAuthProviderYaml,
  startFakeOAuthProvider,
  type FakeOAuthProvider,
} from './support/fake-oauth-provider';
import { waitFor } from './support/processes';
import { CONNECT_SERVICES } from './support/connect-fakes/stack';
import { writeProvidersFile } from './support/providers-file';

/**
 * Token refresh through the whole stack with TWO connections-vault processes: the vault decides, the
 * replicas agree on one refresher through a lease in Postgres, auth-connect calls the provider (a strict
 * fake OAuth server on loopback that rotates refresh tokens and revokes a family when one is reused).
 */

/** The lease the replicas of the SIGKILL test run with (the others keep the default, 30 s). */
const SHORT_LEASE = { SWITCHBOARD_REFRESH_LEASE_MS: '4000', SWITCHBOARD_REFRESH_TIMEOUT_MS: '3000' };
const LEASE_MS = Number(SHORT_LEASE.SWITCHBOARD_REFRESH_LEASE_MS);

async function failure(
  promise: Promise<unknown>,
): Promise<{ status: number; data: { error?: { code?: string; message?: string } } }> {
  try {
    await promise;
  } catch (error) {
    const response = (error as { response?: { status: number; data: { error?: { code?: string } } } })
      .response;
    if (response) return response;
    throw error;
  }
  throw new Error('expected the call to fail');
}

describe('token refresh across two vault replicas', () => {
  let provider: FakeOAuthProvider;
  let stack: Stack;
  let nango: Nango;
  let db: Client;
  let nc: NatsConnection;
  const integration = `fake-${randomUUID().slice(0, 8)}`;
  const startedAt = new Date(Date.now() - 1000);

  const vaults = () =>
    stack.replicas['connections-vault'].filter(
      (r) => r.process.exitCode === null && r.process.signalCode === null,
    );

  /** Imports an OAuth 2 connection holding a fresh token family that expires in `expiresInMs`. */
  const importExpiring = async (connectionId: string, expiresInMs: number) => {
    const tokens = provider.issue();
    const res = await fetch(`${stack.gatewayUrl}/connections`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.secretKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        provider_config_key: integration,
        connection_id: connectionId,
        credentials: {
          type: 'OAUTH2',
          ...tokens,
          expires_at: new Date(Date.now() + expiresInMs).toISOString(),
        },
      }),
    });
    expect(res.status).toBe(201);
    return tokens;
  };

  const leaseOwnerPid = async (connectionId: string): Promise<number | undefined> => {
    const { rows } = await db.query(
      `SELECT refresh_lease_owner FROM vault.connections WHERE provider_config_key = $1 AND connection_id = $2`,
      [integration, connectionId],
    );
    const owner = rows[0]?.refresh_lease_owner as string | null | undefined;
    return owner ? Number(owner.split('/')[1]) : undefined;
  };
  const replicaWithPid = (pid: number): RunningService | undefined =>
    vaults().find((r) => r.process.pid === pid);

  /**
   * NATS drops a killed client's subscriptions when it notices the closed socket; a request routed to it
   * before then is lost (the caller times out). Wait until the vault's queue group answers every time.
   */
  const natsForgot = async () => {
    const packet = () =>
      JSONCodec().encode({ pattern: healthSubject('connections-vault'), id: randomUUID(), data: {} });
    let answered = 0;
    await waitFor(
      'NATS to forget the killed replica',
      async () => {
        try {
          await nc.request(healthSubject('connections-vault'), packet(), { timeout: 300 });
          answered++;
        } catch {
          answered = 0;
        }
        return answered >= 5 ? true : undefined;
      },
      10_000,
      0,
    );
  };

  beforeAll(async () => {
    provider = await startFakeOAuthProvider({ delayMs: 200 });
    const providersFile = writeProvidersFile(fakeOAuthProviderYaml(provider, integration));
    stack = await startStack({
      services: CONNECT_SERVICES,
      replicas: { 'connections-vault': 2 },
      env: { SWITCHBOARD_PROVIDERS_FILE: providersFile, SWITCHBOARD_RATE_LIMIT_PER_MIN: '100000' },
      serviceEnv: {
        // auth-connect is the one that talks to the provider: it must trust the fake's certificate.
        'auth-connect': {
          NODE_EXTRA_CA_CERTS: provider.caFile,
          CONNECT_PORT: String(await freePort()),
          CONNECT_HOST: '127.0.0.1',
        },
      },
      readyTimeoutMs: 150_000,
    });
    nango = new Nango({ secretKey: stack.secretKey, host: stack.gatewayUrl });
    db = new Client({ connectionString: stack.databaseUrl });
    await db.connect();
    nc = await connect({ servers: stack.natsUrl });
    await nango.createIntegration({
      provider: integration,
      unique_key: integration,
      credentials: { type: 'OAUTH2', client_id: provider.clientId, client_secret: provider.clientSecret },
    });
  }, 180_000);

  afterAll(async () => {
    await nc?.close();
    await db?.end();
    await stack?.stop();
    await provider?.stop();
  });

  it('sends exactly one refresh to the provider for 200 simultaneous reads on both replicas, and every reader gets the new token', async () => {
    const tokens = await importExpiring('burst', 5 * 60_000);
    const callsBefore = provider.refreshCalls();
    // Hold the provider's answer until both replicas have readers waiting on this connection.
    const held = provider.hold();

    const reads = Array.from({ length: 200 }, () => nango.getToken(integration, 'burst'));
    await held.received;
    const holderPid = await waitFor('the lease holder to be recorded', () => leaseOwnerPid('burst'));
    const other = vaults().find((r) => r.process.pid !== holderPid)!;
    await waitFor(
      'the other replica to wait for the holder',
      async () => (other.output.join('').includes('another replica is refreshing it') ? true : undefined),
      15_000,
    );
    held.release('proceed');

    const results = await Promise.all(reads);
    expect(provider.refreshCalls() - callsBefore).toBe(1);
    const fresh = provider.currentAccessToken(tokens.refresh_token);
    expect(fresh).toBeDefined();
    expect(fresh).not.toBe(tokens.access_token);
    expect(new Set(results)).toEqual(new Set([fresh]));

    // The stored connection carries the rotated refresh token, and the next read needs no refresh.
    const connection = await nango.getConnection(integration, 'burst', false, true);
    expect(connection.credentials).toMatchObject({
      access_token: fresh,
      refresh_token: expect.not.stringMatching(tokens.refresh_token),
    });
    expect(provider.refreshCalls() - callsBefore).toBe(1);
    expect(replicaWithPid(holderPid)!.output.join('')).toMatch(/credentials refreshed/);
  }, 90_000);

  it('refreshes 15 minutes ahead of expiry, not earlier', async () => {
    await importExpiring('not-yet', 16 * 60_000);
    await importExpiring('margin', 14 * 60_000);
    const before = provider.refreshCalls();
    await nango.getToken(integration, 'not-yet');
    expect(provider.refreshCalls()).toBe(before);
    await nango.getToken(integration, 'margin');
    expect(provider.refreshCalls()).toBe(before + 1);
  });

  it('refreshes a fresh token when forced, and serves the other services over NATS the same way', async () => {
    const tokens = await importExpiring('forced', 2 * 3600_000);
    const before = provider.refreshCalls();
    expect(await nango.getToken(integration, 'forced')).toBe(tokens.access_token);
    expect(provider.refreshCalls()).toBe(before);

    const forced = await nango.getConnection(integration, 'forced', true);
    expect(provider.refreshCalls()).toBe(before + 1);
    expect(forced.credentials).toMatchObject({
      access_token: provider.currentAccessToken(tokens.refresh_token),
    });
    expect(forced.credentials).not.toHaveProperty('refresh_token');

    const { rows } = await db.query('SELECT id FROM auth.environments WHERE uuid = $1', [
      stack.environmentUuid,
    ]);
    const codec = JSONCodec<{ response: { ok: boolean; data: ConnectionCredentials } }>();
    const reply = await nc.request(
      VAULT_SUBJECTS.credentials,
      JSONCodec().encode({
        pattern: VAULT_SUBJECTS.credentials,
        id: randomUUID(),
        data: {
          environmentId: rows[0].id,
          providerConfigKey: integration,
          connectionId: 'forced',
          forceRefresh: true,
        },
      }),
      { timeout: 20_000 },
    );
    const { response } = codec.decode(reply.data);
    expect(provider.refreshCalls()).toBe(before + 2);
    expect(response).toMatchObject({
      ok: true,
      data: {
        connectionId: 'forced',
        provider: integration,
        credentials: { type: 'OAUTH2', access_token: provider.currentAccessToken(tokens.refresh_token) },
      },
    });
  });

  it('records one failure, publishes one auth event and backs off when the provider refuses the refresh', async () => {
    const tokens = await importExpiring('refused', 60_000);
    const before = provider.refreshCalls();
    provider.failNext(1, {
      status: 400,
      error: 'invalid_grant',
      description: 'The refresh token is expired',
    });

    const outcomes = await Promise.all(
      Array.from({ length: 30 }, () => failure(nango.getToken(integration, 'refused'))),
    );
    expect(provider.refreshCalls() - before).toBe(1);
    for (const outcome of outcomes) {
      expect([400, 424]).toContain(outcome.status);
      expect(outcome.data.error?.code).toBe(
        outcome.status === 400 ? 'refresh_token_external_error' : 'connection_refresh_backoff',
      );
    }
    expect(outcomes.some((o) => o.status === 400)).toBe(true);
    expect(outcomes.find((o) => o.status === 400)!.data.error!.message).toMatch(/invalid_grant/);

    // The connection shows the auth error; exactly one event went out for the relay.
    const listed = (await nango.listConnections({ connectionId: 'refused' })).connections[0]!;
    expect(listed.errors).toEqual([{ type: 'auth', log_id: expect.any(String) }]);
    const mine = (events: AuthEvent[]) =>
      events.filter((e) => e.connectionId === 'refused' && e.operation === 'refresh');
    // The vault records each event with the failure (every request above has been answered) and publishes
    // it from its outbox: once the outbox is empty, every event of these requests is in the stream.
    await outboxEmpty(stack.databaseUrl);
    const events = mine(await authEventsSince(nc, startedAt));
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      provider: integration,
      success: false,
      error: { type: 'refresh_token_external_error', description: expect.stringMatching(/invalid_grant/) },
    });
    expect(events[0]!.id).toBe(`auth-refresh-${listed.errors[0]!.log_id}`);

    // Later reads fail fast without asking the provider again.
    const backoff = await failure(nango.getToken(integration, 'refused'));
    expect(backoff).toMatchObject({ status: 424, data: { error: { code: 'connection_refresh_backoff' } } });
    expect(provider.refreshCalls() - before).toBe(1);

    // A forced refresh goes through (the refused call did not consume the refresh token) and clears the error.
    const forced = await nango.getConnection(integration, 'refused', true);
    expect(forced.credentials).toMatchObject({
      access_token: provider.currentAccessToken(tokens.refresh_token),
    });
    expect(forced.errors).toEqual([]);
    expect(await nango.getToken(integration, 'refused')).toBe(
      provider.currentAccessToken(tokens.refresh_token),
    );
  }, 60_000);

  it('lets the surviving replica refresh once the lease of a killed holder runs out', async () => {
    // Two fresh replicas with a short lease replace the running ones (no gap in service).
    const previous = vaults();
    await Promise.all([
      stack.startReplica('connections-vault', SHORT_LEASE),
      stack.startReplica('connections-vault', SHORT_LEASE),
    ]);
    for (const old of previous) {
      const gone = new Promise((resolve) => old.process.once('exit', resolve));
      old.process.kill('SIGTERM');
      await gone;
    }
    expect(vaults()).toHaveLength(2);

    const tokens = await importExpiring('orphaned', 60_000);
    const callsBefore = provider.refreshCalls();
    const successesBefore = provider.successfulRefreshes();
    const held = provider.hold();

    const first = nango.getToken(integration, 'orphaned').catch((error: unknown) => error);
    await held.received;
    const holderPid = (await waitFor('the lease holder to be recorded', () => leaseOwnerPid('orphaned')))!;
    const holder = replicaWithPid(holderPid)!;
    const exited = new Promise((resolve) => holder.process.once('exit', resolve));
    holder.process.kill('SIGKILL');
    await exited;
    const killedAt = Date.now();
    await natsForgot();

    // The survivor waits for the lease to run out, then refreshes itself.
    const token = await nango.getToken(integration, 'orphaned');
    const waited = Date.now() - killedAt;
    held.release('fail');
    expect(token).toBe(provider.currentAccessToken(tokens.refresh_token));
    expect(token).not.toBe(tokens.access_token);
    // Once the lease ran out, not a default lease (30 s) later: the margin is for a loaded two-core machine.
    expect(waited).toBeLessThan(LEASE_MS + 12_000);
    expect(provider.refreshCalls() - callsBefore).toBe(2);
    expect(provider.successfulRefreshes() - successesBefore).toBe(1);
    void first;
  }, 90_000);

  describe('secrets hygiene', () => {
    it('never writes a token or the client secret to any service log', () => {
      const secrets = [...provider.issuedSecrets(), provider.clientSecret];
      expect(secrets.length).toBeGreaterThan(10);
      for (const service of Object.keys(stack.replicas) as (keyof Stack['replicas'])[]) {
        const logs = stack.logs(service);
        for (const value of secrets) expect(logs).not.toContain(value);
      }
    });
  });
});
