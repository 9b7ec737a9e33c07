import { Inject, Injectable } from '@nestjs/common';
import type {
  EnvironmentWebhookState,
  PatchWebhookSettings,
  RotatedSigningKey,
  WebhookSettings,
} from '@switchboard/contracts';
import { EnvelopeCipher } from '@switchboard/crypto';
import type { RelayDb, WebhookSettingsModel as SettingsRow } from '@switchboard/db';
import { WEBHOOK_RELAY_ENV, type WebhookRelayEnv } from '../config/env';
import { RELAY_DB } from '../database/database.module';
import { EgressPolicy } from '@switchboard/egress';
import { generateSigningKey } from '../signing/webhook-signer';
import { WebhookRelayError } from '../webhook-relay.errors';

/** What a delivery needs: where to send and with which keys. */
export interface DeliverySettings {
  settings: WebhookSettings;
  keys: { current: string; previous: string | null };
}

const CACHE_MS = 1_000;
/** The associated data of an environment's sealed signing keys (current and previous). */
export const keyAad = (environmentId: number) => `relay.webhook_signing_key:${environmentId}`;

/**
 * An environment's webhook settings and signing keys. The row is created on first use with a fresh
 * signing key, so every environment has one without auth-connect having to tell the relay about it.
 */
@Injectable()
export class SettingsService {
  private readonly cache = new Map<number, { value: DeliverySettings; until: number }>();
  /** Loads under way, so that the many deliveries that find the cache expired at once read the row once. */
  private readonly loading = new Map<string, Promise<DeliverySettings | undefined>>();
  /** The last keys decrypted per environment, reused while the stored ciphertexts are the same. */
  private readonly decrypted = new Map<number, { stored: string; keys: DeliverySettings['keys'] }>();

  private readonly enabledListeners: ((environmentId: number, urls: string[]) => void)[] = [];

  constructor(
    @Inject(RELAY_DB) private readonly db: RelayDb,
    private readonly cipher: EnvelopeCipher,
    private readonly egress: EgressPolicy,
    @Inject(WEBHOOK_RELAY_ENV) private readonly env: WebhookRelayEnv,
  ) {}

  /** Tells `listener` when endpoints disabled by a 410 are enabled again by setting their URL. */
  onEndpointsEnabled(listener: (environmentId: number, urls: string[]) => void): void {
    this.enabledListeners.push(listener);
  }

  async state(environmentId: number): Promise<EnvironmentWebhookState> {
    const row = await this.ensure(environmentId);
    return this.toState(row, environmentId);
  }

  async update(environmentId: number, patch: PatchWebhookSettings): Promise<EnvironmentWebhookState> {
    const errors = (['primary_url', 'secondary_url'] as const).flatMap((field) => {
      const url = patch[field];
      const problem = url ? this.egress.urlProblem(url) : undefined;
      return problem
        ? [{ code: 'egress_refused', message: `The URL ${problem}`, path: ['webhook_settings', field] }]
        : [];
    });
    if (errors.length > 0)
      throw new WebhookRelayError(
        'invalid_body',
        'A webhook URL is not allowed by the egress policy',
        errors,
      );

    await this.ensure(environmentId);
    const row = await this.db.webhookSettings.update({
      where: { environmentId },
      data: {
        ...(patch.primary_url !== undefined ? { primaryUrl: patch.primary_url } : {}),
        ...(patch.secondary_url !== undefined ? { secondaryUrl: patch.secondary_url } : {}),
        ...(patch.on_auth_creation !== undefined ? { onAuthCreation: patch.on_auth_creation } : {}),
        ...(patch.on_auth_refresh_error !== undefined
          ? { onAuthRefreshError: patch.on_auth_refresh_error }
          : {}),
        ...(patch.on_sync_error !== undefined ? { onSyncError: patch.on_sync_error } : {}),
        ...(patch.on_sync_completion_always !== undefined
          ? { onSyncCompletionAlways: patch.on_sync_completion_always }
          : {}),
        ...(patch.on_async_action_completion !== undefined
          ? { onAsyncActionCompletion: patch.on_async_action_completion }
          : {}),
      },
    });
    this.forget(environmentId);
    // Setting a URL again is how an endpoint disabled by a 410 comes back.
    const urls = [patch.primary_url, patch.secondary_url].filter(
      (url): url is string => typeof url === 'string',
    );
    if (urls.length > 0) {
      await this.db.webhookDisabledEndpoint.deleteMany({ where: { environmentId, url: { in: urls } } });
      for (const listener of this.enabledListeners) listener(environmentId, urls);
    }
    return this.toState(row, environmentId);
  }

  async rotate(environmentId: number): Promise<RotatedSigningKey> {
    const current = await this.ensure(environmentId);
    const key = generateSigningKey();
    const expiresAt = new Date(Date.now() + this.env.SWITCHBOARD_WEBHOOK_SIGNING_KEY_GRACE);
    // Compare-and-set on the current key: two concurrent rotations cannot both demote the same key.
    const { count } = await this.db.webhookSettings.updateMany({
      where: { environmentId, signingKey: current.signingKey },
      data: {
        signingKey: this.cipher.encrypt(key, keyAad(environmentId)),
        previousSigningKey: current.signingKey,
        previousKeyExpiresAt: expiresAt,
      },
    });
    if (count !== 1)
      throw new WebhookRelayError('conflict', 'The signing key was rotated concurrently; try again');
    this.forget(environmentId);
    return { webhook_signing_key: key, previous_webhook_signing_key_expires_at: expiresAt.toISOString() };
  }

  /**
   * Settings and keys for sending; undefined when the environment never configured webhooks (unless
   * `create`: a connection's own URL needs a signing key even then). Kept for a second: every event and
   * attempt needs them, and a change may take that long to apply.
   */
  async forDelivery(environmentId: number, create = false): Promise<DeliverySettings | undefined> {
    const cached = this.cache.get(environmentId);
    if (cached && cached.until > Date.now()) return cached.value;
    const key = `${environmentId}:${create}`;
    let pending = this.loading.get(key);
    if (!pending) {
      pending = this.load(environmentId, create).finally(() => this.loading.delete(key));
      this.loading.set(key, pending);
    }
    return pending;
  }

  /** After a change: the next delivery reads the row again (a load started before it is not joined). */
  private forget(environmentId: number): void {
    this.cache.delete(environmentId);
    this.loading.delete(`${environmentId}:true`);
    this.loading.delete(`${environmentId}:false`);
  }

  private async load(environmentId: number, create: boolean): Promise<DeliverySettings | undefined> {
    const row = create
      ? await this.ensure(environmentId)
      : await this.db.webhookSettings.findUnique({ where: { environmentId } });
    if (!row) return undefined;
    const value = { settings: this.toSettings(row), keys: this.deliveryKeys(row, environmentId) };
    this.cache.set(environmentId, { value, until: Date.now() + CACHE_MS });
    return value;
  }

  /**
   * The keys for signing, decrypted again only when the stored key (or whether the previous one is still
   * in its grace period) changed: the row is re-read every second, the AES-GCM opening need not be.
   */
  private deliveryKeys(row: SettingsRow, environmentId: number): DeliverySettings['keys'] {
    const previousValid =
      row.previousSigningKey !== null &&
      row.previousKeyExpiresAt !== null &&
      row.previousKeyExpiresAt.getTime() > Date.now();
    const stored = `${row.signingKey}\u0000${previousValid ? row.previousSigningKey : ''}`;
    const known = this.decrypted.get(environmentId);
    if (known?.stored === stored) return known.keys;
    const keys = this.keys(row, environmentId);
    if (this.decrypted.size > 10_000) this.decrypted.clear();
    this.decrypted.set(environmentId, { stored, keys });
    return keys;
  }

  private keys(row: SettingsRow, environmentId: number): DeliverySettings['keys'] {
    const previousValid =
      row.previousSigningKey !== null &&
      row.previousKeyExpiresAt !== null &&
      row.previousKeyExpiresAt.getTime() > Date.now();
    return {
      current: this.cipher.decrypt(row.signingKey, keyAad(environmentId)),
      previous:
        previousValid && row.previousSigningKey
          ? this.cipher.decrypt(row.previousSigningKey, keyAad(environmentId))
          : null,
    };
  }

  private async ensure(environmentId: number): Promise<SettingsRow> {
    const existing = await this.db.webhookSettings.findUnique({ where: { environmentId } });
    if (existing) return existing;
    // Concurrent first reads race here; the loser's insert is a no-op and both read the winner's key.
    return this.db.webhookSettings.upsert({
      where: { environmentId },
      create: { environmentId, signingKey: this.cipher.encrypt(generateSigningKey(), keyAad(environmentId)) },
      update: {},
    });
  }

  private async toState(row: SettingsRow, environmentId: number): Promise<EnvironmentWebhookState> {
    const disabled = await this.db.webhookDisabledEndpoint.findMany({
      where: { environmentId },
      orderBy: { disabledAt: 'asc' },
    });
    const keys = this.keys(row, environmentId);
    return {
      webhook_settings: this.toSettings(row),
      webhook_signing_key: keys.current,
      previous_webhook_signing_key_expires_at:
        keys.previous && row.previousKeyExpiresAt ? row.previousKeyExpiresAt.toISOString() : null,
      disabled_webhook_urls: disabled.map((d) => ({
        url: d.url,
        disabled_at: d.disabledAt.toISOString(),
        reason: d.reason,
      })),
    };
  }

  private toSettings(row: SettingsRow): WebhookSettings {
    return {
      primary_url: row.primaryUrl,
      secondary_url: row.secondaryUrl,
      on_auth_creation: row.onAuthCreation,
      on_auth_refresh_error: row.onAuthRefreshError,
      on_sync_error: row.onSyncError,
      on_sync_completion_always: row.onSyncCompletionAlways,
      on_async_action_completion: row.onAsyncActionCompletion,
    };
  }
}
