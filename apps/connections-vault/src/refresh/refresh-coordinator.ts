import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  ERROR_CODES,
  refreshTokenResultSchema,
  SwitchboardError,
  type Credentials,
  type ErrorCode,
  type RefreshTokenResult,
  AUTH_INTERNAL_REQUESTS,
} from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import { VAULT_ENV, type VaultEnv } from '../config/env';
import { ConnectionsRepository, type ConnectionRow } from '../connections/connections.repository';
import { CredentialsCipher, credentialsOf, expiresAtOf } from '../credentials/credentials-cipher';
import { SecretConfigFields, type SplitConfig } from '../credentials/secret-config';
import { authEvent } from '../events/auth-event';
import { OutboxPublisher } from '../events/outbox';
import { VaultError } from '../vault.errors';
import { backoffMs, justRefreshed, keepRefreshToken, needsRefresh, type RefreshAsk } from './refresh-policy';
import { recordRefresh } from '../metrics';

export interface FreshConnection {
  row: ConnectionRow;
  credentials: Credentials;
}

/** What a waiting caller compares against to see that someone else's refresh finished or failed. */
interface Observed {
  plaintext: string | null;
  failureAt: number;
}

/** Codes a failed refresh may answer with; anything else from auth-connect is reported as the provider's failure. */
const REFRESH_FAILURE_CODES = new Set<ErrorCode>([
  'refresh_token_external_error',
  'invalid_credentials',
  'connection_refresh_exhausted',
  'invalid_connection',
  'bad_gateway',
]);
const MAX_MESSAGE = 500;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Hands out credentials that are fresh enough, refreshing them first when they expire soon (or when a
 * caller forces it), such that exactly one refresh call reaches the provider per connection however many
 * reads arrive at once on however many replicas:
 *
 * - inside a process, concurrent reads of one connection share one promise (single flight);
 * - across processes, a lease in the connection's row (atomic conditional UPDATE, bounded by
 *   SWITCHBOARD_REFRESH_LEASE_MS) elects the one replica that calls auth-connect; the others poll the
 *   row until the new credentials (or the failure) land, or the lease runs out because its holder died;
 * - after taking the lease, the holder looks again: if someone refreshed (or failed) in the meantime it
 *   uses that outcome instead of calling the provider a second time.
 */
@Injectable()
export class RefreshCoordinator {
  private readonly logger = new Logger('Refresh');
  private readonly inflight = new Map<number, Promise<FreshConnection>>();
  /** Names this process in `refresh_lease_owner`; the pid lets an operator (or a test) find the holder. */
  readonly owner = `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`;

  constructor(
    private readonly repository: ConnectionsRepository,
    private readonly cipher: CredentialsCipher,
    private readonly nats: NatsRequester,
    private readonly outbox: OutboxPublisher,
    private readonly secretFields: SecretConfigFields,
    @Inject(VAULT_ENV) private readonly env: VaultEnv,
  ) {}

  async fresh(row: ConnectionRow, ask: RefreshAsk): Promise<FreshConnection> {
    if (row.credentials === null)
      throw new VaultError('invalid_connection', 'This connection has no credentials');
    const credentials = this.cipher.open(row.id, row.credentials);
    if (!needsRefresh(credentials, ask, Date.now(), this.env.SWITCHBOARD_REFRESH_MARGIN_MS))
      return { row, credentials };
    if (!ask.force && !ask.githubAppJwt && justRefreshed(row.lastRefreshSuccess, credentials, Date.now()))
      return { row, credentials };
    if (!ask.force) this.assertNotBackingOff(row);

    const running = this.inflight.get(row.id);
    if (running) return running;
    const flight = this.coordinate(row).finally(() => this.inflight.delete(row.id));
    this.inflight.set(row.id, flight);
    return flight;
  }

  private assertNotBackingOff(row: ConnectionRow): void {
    if (row.refreshFailures <= 0 || !row.lastRefreshFailure) return;
    const wait = backoffMs(
      row.refreshFailures,
      this.env.SWITCHBOARD_REFRESH_BACKOFF_MS,
      this.env.SWITCHBOARD_REFRESH_BACKOFF_MAX_MS,
    );
    const retryAt = row.lastRefreshFailure.getTime() + wait;
    if (Date.now() < retryAt) {
      throw new VaultError(
        'connection_refresh_backoff',
        `The last ${row.refreshFailures === 1 ? 'refresh' : `${row.refreshFailures} refreshes`} of this connection failed; ` +
          `the next attempt is allowed after ${new Date(retryAt).toISOString()} (or pass force_refresh=true)`,
      );
    }
  }

  private async coordinate(row: ConnectionRow): Promise<FreshConnection> {
    const observed: Observed = {
      plaintext: this.cipher.openText(row.id, row.credentials),
      failureAt: row.lastRefreshFailure?.getTime() ?? 0,
    };
    const deadline =
      Date.now() + this.env.SWITCHBOARD_REFRESH_LEASE_MS + this.env.SWITCHBOARD_REFRESH_TIMEOUT_MS + 5_000;
    let waiting = false;
    while (Date.now() < deadline) {
      const leased = await this.repository.tryAcquireLease(
        row.id,
        this.owner,
        this.env.SWITCHBOARD_REFRESH_LEASE_MS,
      );
      if (leased) {
        try {
          const settled = this.settledMeanwhile(leased, observed);
          if (settled) {
            await this.repository.releaseLease(row.id, this.owner);
            return settled();
          }
          return await this.refreshUnderLease(leased);
        } catch (error) {
          // Whatever went wrong (an undecryptable row, the database), others must not wait for the lease to run out.
          await this.repository.releaseLease(row.id, this.owner).catch(() => undefined);
          throw error;
        }
      }
      if (!waiting) {
        waiting = true;
        this.logger.log(`connection ${row.id}: another replica is refreshing it; waiting for its result`);
      }
      await sleep(this.env.SWITCHBOARD_REFRESH_POLL_MS);
      const current = await this.repository.findById(row.id);
      if (!current)
        throw new VaultError('unknown_connection', 'The connection was deleted while it was being refreshed');
      const settled = this.settledMeanwhile(current, observed);
      if (settled) return settled();
    }
    throw new VaultError(
      'gateway_timeout',
      'The token refresh of this connection did not finish in time; try again',
    );
  }

  /**
   * Someone else's refresh landed (new plaintext) or failed (a newer failure) since this caller read the
   * row. Returns how to finish with that outcome, or undefined to keep going.
   */
  private settledMeanwhile(current: ConnectionRow, observed: Observed): (() => FreshConnection) | undefined {
    const failureAt = current.lastRefreshFailure?.getTime() ?? 0;
    if (failureAt > observed.failureAt) {
      return () => {
        throw this.failureOf(current);
      };
    }
    // New credentials landed after this read began (a refresh, or a reconnect): they are as fresh as any
    // this caller could get, even when the provider issues tokens shorter-lived than the margin, and even
    // for a forced read. A rewrap changes the ciphertext, not the plaintext, so it does not count.
    const plaintext = this.cipher.openText(current.id, current.credentials);
    if (plaintext !== null && plaintext !== observed.plaintext) {
      return () => ({ row: current, credentials: credentialsOf(JSON.parse(plaintext)) });
    }
    return undefined;
  }

  private failureOf(row: ConnectionRow): SwitchboardError {
    const last = row.lastRefreshError as { code?: string; message?: string } | null;
    const code = (ERROR_CODES as readonly string[]).includes(last?.code ?? '')
      ? (last!.code as ErrorCode)
      : 'refresh_token_external_error';
    return new VaultError(code, last?.message ?? 'The token refresh failed');
  }

  private async refreshUnderLease(row: ConnectionRow): Promise<FreshConnection> {
    const blob = row.credentials;
    if (blob === null) {
      await this.repository.releaseLease(row.id, this.owner);
      throw new VaultError('invalid_connection', 'This connection has no credentials');
    }
    const previous = this.cipher.open(row.id, blob);
    const secretConfig = this.cipher.openSecretConfig(row.id, blob);
    let result: RefreshTokenResult;
    try {
      const answer = await this.nats.call(
        AUTH_INTERNAL_REQUESTS.refresh,
        {
          environmentId: row.environmentId,
          providerConfigKey: row.providerConfigKey,
          connectionId: row.connectionId,
          credentials: previous,
          connectionConfig: { ...((row.connectionConfig as Record<string, unknown>) ?? {}), ...secretConfig },
        },
        { timeoutMs: this.env.SWITCHBOARD_REFRESH_TIMEOUT_MS },
      );
      const parsed = refreshTokenResultSchema.safeParse(answer);
      if (!parsed.success)
        throw new VaultError(
          'refresh_token_external_error',
          'The token refresh returned no usable credentials',
        );
      result = parsed.data;
    } catch (error) {
      const code = error instanceof SwitchboardError ? error.code : 'server_error';
      // Nobody could take the call (auth-connect down): not the provider's failure, so nothing is recorded.
      if (code === 'service_unavailable') {
        recordRefresh(row.provider, 'unavailable');
        await this.repository.releaseLease(row.id, this.owner);
        throw error;
      }
      return this.fail(row, error);
    }

    const next = keepRefreshToken(previous, result.credentials);
    // Split again: a field the provider returned may be secret, and a row written before secret fields
    // were sealed gets them out of its column now.
    const config = this.secretFields.split(row.provider, {
      ...((row.connectionConfig as Record<string, unknown>) ?? {}),
      ...secretConfig,
      ...(result.connectionConfig ?? {}),
    });
    const saved = await this.save(row, blob, next, config);
    recordRefresh(row.provider, 'success');
    this.logger.log(`connection ${row.id}: credentials refreshed`);
    return saved;
  }

  /** Compare-and-set on the ciphertext we refreshed from; a rewrap of the same plaintext is retried on. */
  private async save(
    row: ConnectionRow,
    blob: string,
    next: Credentials,
    config: SplitConfig,
  ): Promise<FreshConnection> {
    let from = blob;
    const fromPlain = this.cipher.openText(row.id, blob);
    for (let attempt = 0; attempt < 5; attempt++) {
      const saved = await this.repository.saveRefreshed(
        row.id,
        this.owner,
        from,
        this.cipher.seal(row.id, next, config.secret),
        expiresAtOf(next) ?? null,
        config.plain,
      );
      if (saved) return { row: saved, credentials: next };
      const current = await this.repository.credentialsOf(row.id);
      if (current === undefined)
        throw new VaultError('unknown_connection', 'The connection was deleted while it was being refreshed');
      if (current === null || this.cipher.openText(row.id, current) !== fromPlain) break;
      from = current; // only rewrapped under a newer master key: same credentials, try again on the new ciphertext
    }
    // Someone stored other credentials (a reconnect, an import) while we refreshed: theirs win.
    await this.repository.releaseLease(row.id, this.owner);
    const latest = await this.repository.findById(row.id);
    if (!latest?.credentials)
      throw new VaultError('unknown_connection', 'The connection was deleted while it was being refreshed');
    return { row: latest, credentials: this.cipher.open(latest.id, latest.credentials) };
  }

  private async fail(row: ConnectionRow, error: unknown): Promise<never> {
    const wire = error instanceof SwitchboardError ? error : undefined;
    if (!wire)
      this.logger.error(
        `connection ${row.id}: refresh failed unexpectedly: ${(error as Error)?.message ?? String(error)}`,
      );
    const code: ErrorCode =
      wire && REFRESH_FAILURE_CODES.has(wire.code) ? wire.code : 'refresh_token_external_error';
    const message = (
      wire?.code === 'gateway_timeout'
        ? 'The token refresh did not finish in time'
        : (wire?.message ?? 'The token refresh failed')
    ).slice(0, MAX_MESSAGE);
    recordRefresh(row.provider, 'failure', code);
    const logId = randomUUID();
    const recorded = await this.repository.recordRefreshFailure(
      row.id,
      this.owner,
      { code, message },
      logId,
      authEvent(row, `auth-refresh-${logId}`, 'refresh', { type: code, description: message }),
    );
    if (recorded) void this.outbox.flush([`auth-refresh-${logId}`]);
    this.logger.warn(`connection ${row.id}: refresh failed (${code}); recorded as error ${logId}`);
    throw new VaultError(code, message);
  }
}
