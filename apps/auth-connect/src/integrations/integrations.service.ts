import { createPrivateKey, randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import {
  EVENT_SUBJECTS,
  integrationEventSchema,
  type Caller,
  type CreateIntegrationBody,
  type FieldError,
  type Integration,
  type IntegrationCredentialsInput,
  type ResolvedIntegration,
  type UpdateIntegrationBody,
  WEBHOOK_ONLY_CREDENTIALS_TYPES,
  CONNECTION_REQUESTS,
} from '@switchboard/contracts';
import { EnvelopeCipher } from '@switchboard/crypto';
import { Prisma, type AuthDb, type IntegrationModel as IntegrationRow } from '@switchboard/db';
import { NATS_CONNECTION, NatsRequester, publishEvent } from '@switchboard/messaging';
import {
  PUBLIC_KEY_ALGORITHMS,
  publicKeyFits,
  readPublicKey,
  type ResolvedProvider,
} from '@switchboard/providers';
import type { NatsConnection } from 'nats';
import { AuthConnectError } from '../auth-connect.errors';
import { AUTH_CONNECT_ENV, type AuthConnectEnv } from '../config/env';
import { AUTH_DB } from '../database/database.module';
import { logoUrl, ProvidersService } from '../providers/providers.service';

interface IntegrationSecrets {
  client_secret?: string;
  private_key?: string;
  webhook_secret?: string;
  webhook_public_key?: string;
}

/**
 * Which integration credential type a provider's auth mode takes: its own. The modes whose connections bring
 * their own credentials take only a webhook secret, and only when the provider's webhooks are signed.
 */
const CREDENTIALS_FOR_AUTH_MODE: Record<string, IntegrationCredentialsInput['type']> = {
  OAUTH1: 'OAUTH1',
  OAUTH2: 'OAUTH2',
  TBA: 'TBA',
  APP: 'APP',
  CUSTOM: 'CUSTOM',
  ...Object.fromEntries(WEBHOOK_ONLY_CREDENTIALS_TYPES.map((mode) => [mode, mode])),
};
const isWebhookOnly = (type: string): type is (typeof WEBHOOK_ONLY_CREDENTIALS_TYPES)[number] =>
  (WEBHOOK_ONLY_CREDENTIALS_TYPES as readonly string[]).includes(type);

/** The associated data of an integration's sealed secrets (also used when they are rewrapped). */
export const secretsAad = (id: number) => `auth.integrations:${id}:secrets`;
const invalid = (message: string, errors: FieldError[]) =>
  new AuthConnectError('invalid_body', message, errors);

@Injectable()
export class IntegrationsService {
  constructor(
    @Inject(AUTH_DB) private readonly db: AuthDb,
    @Inject(AUTH_CONNECT_ENV) private readonly env: AuthConnectEnv,
    private readonly cipher: EnvelopeCipher,
    private readonly providers: ProvidersService,
    private readonly nats: NatsRequester,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
  ) {}

  async list(caller: Caller): Promise<Integration[]> {
    const rows = await this.db.integration.findMany({
      where: { environmentId: caller.environmentId },
      orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
    });
    return rows.map((row) => this.toApi(row, caller, { webhook: false, credentials: false }));
  }

  async get(
    caller: Caller,
    uniqueKey: string,
    include: { webhook: boolean; credentials: boolean },
  ): Promise<Integration> {
    return this.toApi(await this.findOrThrow(caller, uniqueKey), caller, include);
  }

  async create(caller: Caller, body: CreateIntegrationBody): Promise<Integration> {
    const provider = this.providers.find(body.provider);
    if (!provider) {
      throw invalid('Invalid provider', [
        { code: 'invalid_value', message: 'Invalid provider', path: ['provider'] },
      ]);
    }
    if (body.credentials) this.checkCredentials(provider, body.credentials);
    try {
      const row = await this.db.$transaction(async (tx) => {
        const created = await tx.integration.create({
          data: {
            environmentId: caller.environmentId,
            uniqueKey: body.unique_key,
            provider: body.provider,
            displayName: body.display_name ?? null,
            forwardWebhooks: body.forward_webhooks ?? true,
            integrationConfig:
              (body.integration_config as Prisma.InputJsonValue | undefined) ?? Prisma.DbNull,
            ...this.plainCredentialColumns(body.credentials),
          },
        });
        // The ciphertext is bound to the row id, which exists only once the row is inserted.
        return tx.integration.update({
          where: { id: created.id },
          data: { secrets: this.sealSecrets(created.id, body.credentials, body.custom) },
        });
      });
      return this.toApi(row, caller, { webhook: false, credentials: false });
    } catch (error) {
      throw this.duplicateKeyError(error) ?? error;
    }
  }

  async update(caller: Caller, uniqueKey: string, body: UpdateIntegrationBody): Promise<Integration> {
    const existing = await this.findOrThrow(caller, uniqueKey);
    const provider = this.providers.find(existing.provider);
    if (body.credentials) this.checkCredentials(provider, body.credentials);
    const renaming = body.unique_key !== undefined && body.unique_key !== existing.uniqueKey;
    if (renaming) {
      const count = await this.nats.call(CONNECTION_REQUESTS.countForIntegration, {
        environmentId: caller.environmentId,
        providerConfigKey: existing.uniqueKey,
      });
      if (count > 0) {
        throw invalid('Cannot rename an integration that has connections', [
          {
            code: 'custom',
            message: `${count} connection(s) use this integration; delete them first`,
            path: ['unique_key'],
          },
        ]);
      }
    }
    const data: Prisma.IntegrationUpdateInput = {};
    if (renaming) data.uniqueKey = body.unique_key;
    if (body.display_name !== undefined) data.displayName = body.display_name;
    if (body.forward_webhooks !== undefined) data.forwardWebhooks = body.forward_webhooks;
    if (body.integration_config !== undefined)
      data.integrationConfig = body.integration_config as Prisma.InputJsonValue;
    if (body.credentials !== undefined || body.custom !== undefined) {
      const current = this.openSecrets(existing);
      const credentials = body.credentials;
      Object.assign(data, credentials ? this.plainCredentialColumns(credentials) : {});
      const merged = credentials ? this.updatedSecrets(current.secrets, credentials) : current.secrets;
      data.secrets = this.cipher.encryptJson(
        { ...merged, custom: body.custom ?? current.custom },
        secretsAad(existing.id),
      );
    }
    try {
      const row = await this.db.integration.update({ where: { id: existing.id }, data });
      return this.toApi(row, caller, { webhook: false, credentials: false });
    } catch (error) {
      throw this.duplicateKeyError(error) ?? error;
    }
  }

  async delete(caller: Caller, uniqueKey: string): Promise<{ success: true }> {
    const existing = await this.findOrThrow(caller, uniqueKey);
    // Connections go first: an integration must never disappear from under live connections.
    await this.nats.call(CONNECTION_REQUESTS.deleteForIntegration, {
      environmentId: caller.environmentId,
      providerConfigKey: existing.uniqueKey,
    });
    // Stored by JetStream before the row goes, so the orchestrator deletes the integration's functions
    // even if it is down now; if this fails, nothing more is deleted and the caller may try again.
    const event = integrationEventSchema.parse({
      id: randomUUID(),
      environmentId: caller.environmentId,
      providerConfigKey: existing.uniqueKey,
      operation: 'deletion',
      occurredAt: new Date().toISOString(),
    });
    await publishEvent(this.nc, EVENT_SUBJECTS.integration, event.id, event);
    await this.db.integration.delete({ where: { id: existing.id } });
    return { success: true };
  }

  /**
   * An integration with its secrets decrypted and its catalog entry, for the other services' internal use
   * (token refresh, proxy, webhook relay). Never exposed through the public API, never logged.
   */
  async resolveInternal(environmentId: number, uniqueKey: string): Promise<ResolvedIntegration> {
    const row = await this.db.integration.findUnique({
      where: { environmentId_uniqueKey: { environmentId, uniqueKey } },
    });
    if (!row)
      throw new AuthConnectError('unknown_provider_config', `Integration "${uniqueKey}" does not exist`);
    const provider = this.providers.find(row.provider);
    if (!provider) {
      const message = `Provider "${row.provider}" of integration "${uniqueKey}" is not in the catalog`;
      throw new AuthConnectError('unknown_provider_template', message);
    }
    const { secrets } = this.openSecrets(row);
    return {
      uniqueKey: row.uniqueKey,
      provider: row.provider,
      providerDefinition: provider,
      credentialsType: row.credentialsType,
      clientId: row.clientId,
      clientSecret: secrets.client_secret ?? null,
      scopes: row.scopes,
      appId: row.appId,
      appLink: row.appLink,
      privateKey: secrets.private_key ?? null,
      webhookSecret: secrets.webhook_secret ?? null,
      webhookPublicKey: secrets.webhook_public_key ?? null,
      integrationConfig: (row.integrationConfig as Record<string, unknown> | null) ?? null,
      forwardWebhooks: row.forwardWebhooks,
    };
  }

  private async findOrThrow(caller: Caller, uniqueKey: string): Promise<IntegrationRow> {
    const row = await this.db.integration.findUnique({
      where: { environmentId_uniqueKey: { environmentId: caller.environmentId, uniqueKey } },
    });
    if (!row) throw new AuthConnectError('not_found', `Integration "${uniqueKey}" does not exist`);
    return row;
  }

  private checkCredentials(
    provider: ResolvedProvider | undefined,
    credentials: IntegrationCredentialsInput,
  ): void {
    const authMode = provider?.auth_mode ?? '';
    const expected = CREDENTIALS_FOR_AUTH_MODE[authMode];
    if (expected !== credentials.type) {
      const message = expected
        ? `This provider uses ${authMode}; credentials.type must be ${expected}`
        : `This provider uses ${authMode}, which takes no integration credentials`;
      throw invalid(message, [{ code: 'invalid_value', message, path: ['credentials', 'type'] }]);
    }
    if (isWebhookOnly(credentials.type) && !provider?.webhook?.signature) {
      const message = `This provider uses ${authMode} and its webhooks are not signed: it takes no integration credentials`;
      throw invalid(message, [{ code: 'invalid_value', message, path: ['credentials', 'type'] }]);
    }
    if (
      isWebhookOnly(credentials.type) &&
      !('webhook_secret' in credentials && credentials.webhook_secret) &&
      !('webhook_public_key' in credentials && credentials.webhook_public_key)
    ) {
      const message = `This provider uses ${authMode}: its integration credentials are a webhook_secret or a webhook_public_key`;
      throw invalid(message, [{ code: 'custom', message, path: ['credentials', 'webhook_secret'] }]);
    }
    if ('webhook_public_key' in credentials && credentials.webhook_public_key !== undefined) {
      this.checkWebhookPublicKey(provider, credentials.webhook_public_key);
    }
    if ('private_key' in credentials) {
      try {
        createPrivateKey(credentials.private_key);
      } catch {
        const message = 'private_key is not a readable PEM private key';
        throw invalid(message, [{ code: 'custom', message, path: ['credentials', 'private_key'] }]);
      }
    }
  }

  /**
   * A stored webhook public key must be one the provider's recipe can check with: a public key (never a
   * private one, which would then sit where nobody expects a secret) of the recipe's algorithm.
   */
  private checkWebhookPublicKey(provider: ResolvedProvider | undefined, material: string): void {
    const refuse = (message: string): never => {
      throw invalid(message, [{ code: 'custom', message, path: ['credentials', 'webhook_public_key'] }]);
    };
    const algorithm = provider?.webhook?.signature?.algorithm;
    const publicKeyAlgorithm = PUBLIC_KEY_ALGORITHMS.find((candidate) => candidate === algorithm);
    if (!publicKeyAlgorithm) {
      return refuse(
        "This provider's webhooks are not signed with a public key: it takes no webhook_public_key",
      );
    }
    if (/PRIVATE KEY/.test(material)) {
      return refuse('webhook_public_key is a private key; give the public key (BEGIN PUBLIC KEY)');
    }
    const key = readPublicKey(material);
    if (!key) {
      return refuse(
        'webhook_public_key is not a readable public key (PEM or base64 DER SubjectPublicKeyInfo)',
      );
    }
    if (!publicKeyFits(publicKeyAlgorithm, key)) {
      refuse(
        `webhook_public_key is a ${key.asymmetricKeyType ?? 'unknown'} key; this provider signs its webhooks with ${publicKeyAlgorithm}`,
      );
    }
  }

  private plainCredentialColumns(credentials: IntegrationCredentialsInput | undefined) {
    return {
      credentialsType: credentials?.type ?? null,
      clientId: credentials && 'client_id' in credentials ? credentials.client_id : null,
      scopes: credentials && 'scopes' in credentials ? (credentials.scopes ?? null) : null,
      appId: credentials && 'app_id' in credentials ? credentials.app_id : null,
      appLink: credentials && 'app_link' in credentials ? credentials.app_link : null,
    };
  }

  private secretsOf(credentials: IntegrationCredentialsInput | undefined): IntegrationSecrets {
    if (!credentials) return {};
    return {
      ...('client_secret' in credentials ? { client_secret: credentials.client_secret } : {}),
      ...('private_key' in credentials ? { private_key: credentials.private_key } : {}),
      // An empty webhook secret is none: it must never become an HMAC key.
      ...('webhook_secret' in credentials && credentials.webhook_secret
        ? { webhook_secret: credentials.webhook_secret }
        : {}),
      ...('webhook_public_key' in credentials && credentials.webhook_public_key !== undefined
        ? { webhook_public_key: credentials.webhook_public_key }
        : {}),
    };
  }

  /**
   * The secrets after an update that sends `credentials`. As Nango's PATCH: the client credentials are
   * replaced, but a webhook secret or public key the update does not send is kept (rotating a client secret
   * must not silently break webhook verification); an empty `webhook_secret` removes the stored one.
   */
  private updatedSecrets(
    current: IntegrationSecrets,
    credentials: IntegrationCredentialsInput,
  ): IntegrationSecrets {
    const kept: IntegrationSecrets = {
      ...(current.webhook_secret !== undefined ? { webhook_secret: current.webhook_secret } : {}),
      ...(current.webhook_public_key !== undefined ? { webhook_public_key: current.webhook_public_key } : {}),
    };
    const next = { ...kept, ...this.secretsOf(credentials) };
    if ('webhook_secret' in credentials && credentials.webhook_secret === '') delete next.webhook_secret;
    return next;
  }

  private sealSecrets(
    id: number,
    credentials: IntegrationCredentialsInput | undefined,
    custom: Record<string, string> | undefined,
  ) {
    return this.cipher.encryptJson(
      { ...this.secretsOf(credentials), custom: custom ?? null },
      secretsAad(id),
    );
  }

  private openSecrets(row: IntegrationRow): {
    secrets: IntegrationSecrets;
    custom: Record<string, string> | null;
  } {
    if (!row.secrets) return { secrets: {}, custom: null };
    const { custom, ...secrets } = this.cipher.decryptJson<
      IntegrationSecrets & { custom: Record<string, string> | null }
    >(row.secrets, secretsAad(row.id));
    return { secrets, custom };
  }

  private duplicateKeyError(error: unknown): AuthConnectError | undefined {
    if (error instanceof Prisma.PrismaClientKnownRequestError && error.code === 'P2002') {
      return invalid('Unique key already exists', [
        { code: 'custom', message: 'Unique key already exists', path: ['unique_key'] },
      ]);
    }
    return undefined;
  }

  private toApi(
    row: IntegrationRow,
    caller: Caller,
    include: { webhook: boolean; credentials: boolean },
  ): Integration {
    const provider = this.providers.find(row.provider);
    const serverUrl = this.env.SWITCHBOARD_SERVER_URL.replace(/\/$/, '');
    const out: Integration = {
      unique_key: row.uniqueKey,
      provider: row.provider,
      display_name: row.displayName ?? provider?.display_name ?? row.provider,
      logo: logoUrl(serverUrl, row.provider),
      forward_webhooks: row.forwardWebhooks,
      integration_config: (row.integrationConfig as Record<string, unknown> | null) ?? null,
      created_at: row.createdAt.toISOString(),
      updated_at: row.updatedAt.toISOString(),
    };
    if (include.webhook) {
      out.webhook_url = `${serverUrl}/webhook/${caller.environmentUuid}/${encodeURIComponent(row.uniqueKey)}`;
    }
    if (include.credentials) out.credentials = this.credentialsOut(row);
    return out;
  }

  private credentialsOut(row: IntegrationRow): Integration['credentials'] {
    const { secrets } = this.openSecrets(row);
    switch (row.credentialsType) {
      case 'OAUTH1':
      case 'OAUTH2':
      case 'TBA':
        return {
          type: row.credentialsType,
          client_id: row.clientId ?? '',
          client_secret: secrets.client_secret ?? '',
          scopes: row.scopes,
          webhook_secret: secrets.webhook_secret ?? null,
        };
      case 'APP':
        return {
          type: 'APP',
          app_id: row.appId ?? '',
          private_key: secrets.private_key ?? '',
          app_link: row.appLink ?? '',
          ...(secrets.webhook_secret ? { webhook_secret: secrets.webhook_secret } : {}),
        };
      case 'CUSTOM':
        return {
          type: 'CUSTOM',
          client_id: row.clientId ?? '',
          client_secret: secrets.client_secret ?? '',
          app_id: row.appId ?? '',
          app_link: row.appLink ?? '',
          private_key: secrets.private_key ?? '',
          ...(secrets.webhook_secret ? { webhook_secret: secrets.webhook_secret } : {}),
        };
      default:
        if (row.credentialsType && isWebhookOnly(row.credentialsType))
          return { type: row.credentialsType, webhook_secret: secrets.webhook_secret ?? null };
        return null;
    }
  }
}
