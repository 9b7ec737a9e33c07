import { Inject, Injectable } from '@nestjs/common';
import {
  CONNECT_SESSION_TTL_MS,
  type Caller,
  type ConnectIntegrationDefaults,
  type ConnectSessionCreated,
  type ConnectSessionView,
  type CreateConnectSessionBody,
  type EndUser,
  type FieldError,
  type ReconnectConnectSessionBody,
  type VerifiedConnectSession,
  VAULT_REQUESTS,
} from '@switchboard/contracts';
import { EnvelopeCipher } from '@switchboard/crypto';
import { Prisma, type ConnectDb } from '@switchboard/db';
import { NatsRequester } from '@switchboard/messaging';
import { connectionConfigValueProblems } from '@switchboard/providers';
import { AuthConnectError } from '../auth-connect.errors';
import { AUTH_CONNECT_ENV, type AuthConnectEnv } from '../config/env';
import { AUTH_DB } from '../database/database.module';
import { ProvidersService } from '../providers/providers.service';
import { generateSessionToken, hashSessionToken } from './session-token';
import { buildSessionTags, endUserView } from './session-tags';

/** A session as the flows use it: everything decrypted, expiry already checked. */
export interface LoadedSession {
  id: number;
  environmentId: number;
  endUser: EndUser | null;
  tags: Record<string, string>;
  /** null = every integration of the environment. */
  allowedIntegrations: string[] | null;
  defaults: Record<string, ConnectIntegrationDefaults>;
  overrides: Record<string, { docs_connect?: string | undefined }> | null;
  webhookUrlOverride: string | null;
  reconnectConnectionId: string | null;
  expiresAt: Date;
}

type SessionRow = Prisma.ConnectSessionGetPayload<object>;

const secretsAad = (tokenHash: string) => `auth.connect_sessions:${tokenHash}:secrets`;

/** Nango's connect UI reads these; Switchboard has no per-environment theming yet. */
const CONNECT_UI_SETTINGS: ConnectSessionView['connectUISettings'] = {
  theme: { light: { primary: '#2563eb' }, dark: { primary: '#60a5fa' } },
  defaultTheme: 'system',
  showWatermark: false,
};

const invalid = (message: string, errors?: FieldError[]) =>
  new AuthConnectError('invalid_body', message, errors);
const unknownToken = () =>
  new AuthConnectError(
    'unknown_connect_session_token',
    'The connect session token is unknown or has expired',
  );

@Injectable()
export class ConnectSessionsService {
  constructor(
    @Inject(AUTH_DB) private readonly db: ConnectDb,
    @Inject(AUTH_CONNECT_ENV) private readonly env: AuthConnectEnv,
    private readonly cipher: EnvelopeCipher,
    private readonly nats: NatsRequester,
    private readonly providers: ProvidersService,
  ) {}

  async create(caller: Caller, body: CreateConnectSessionBody): Promise<ConnectSessionCreated> {
    await this.checkIntegrationsExist(caller, [
      ...(body.allowed_integrations ?? []).map((key, index) => ({
        key,
        path: ['allowed_integrations', index],
      })),
      ...this.keyedPaths('integrations_config_defaults', body.integrations_config_defaults),
      ...this.keyedPaths('overrides', body.overrides),
    ]);
    await this.checkDefaultsHosts(caller, body.integrations_config_defaults);
    const { defaults, webhookUrlOverride } = hoistDeprecatedWebhookUrl(
      body.integrations_config_defaults,
      body.webhook_url_override,
    );
    return this.insert(caller, {
      endUser: endUserView(body.end_user, body.organization),
      tags: buildSessionTags(body.end_user, body.organization, body.tags),
      allowedIntegrations:
        body.allowed_integrations && body.allowed_integrations.length > 0 ? body.allowed_integrations : null,
      defaults,
      overrides: body.overrides ?? null,
      webhookUrlOverride,
      reconnectConnectionId: null,
    });
  }

  /**
   * A session that re-authorizes one existing connection. Only connections completed through a session
   * qualify: those are the ones whose end user and tags a session owns.
   */
  async reconnect(caller: Caller, body: ReconnectConnectSessionBody): Promise<ConnectSessionCreated> {
    const notFound = () => invalid('ConnectionID or IntegrationId does not exists');
    const integration = await this.db.integration.findUnique({
      where: {
        environmentId_uniqueKey: { environmentId: caller.environmentId, uniqueKey: body.integration_id },
      },
    });
    if (!integration) throw notFound();
    const matches = await this.nats.call(VAULT_REQUESTS.match, {
      environmentId: caller.environmentId,
      providerConfigKey: body.integration_id,
      field: 'connection_id',
      value: body.connection_id,
    });
    if (matches.length === 0) throw notFound();
    const record = await this.db.sessionConnection.findUnique({
      where: {
        environmentId_providerConfigKey_connectionId: {
          environmentId: caller.environmentId,
          providerConfigKey: body.integration_id,
          connectionId: body.connection_id,
        },
      },
    });
    if (!record) {
      throw invalid('Only connections created through a connect session can be reconnected', [
        {
          code: 'custom',
          message: 'This connection was not created through a connect session',
          path: ['connection_id'],
        },
      ]);
    }
    await this.checkIntegrationsExist(caller, [
      ...this.keyedPaths('integrations_config_defaults', body.integrations_config_defaults),
      ...this.keyedPaths('overrides', body.overrides),
    ]);
    await this.checkDefaultsHosts(caller, body.integrations_config_defaults);
    let endUser = endUserView(body.end_user, body.organization);
    if (!endUser && record.endUserId) {
      const existing = await this.db.endUser.findUnique({
        where: {
          environmentId_endUserId: { environmentId: caller.environmentId, endUserId: record.endUserId },
        },
      });
      if (existing) endUser = endUserFromRow(existing);
    }
    const { defaults, webhookUrlOverride } = hoistDeprecatedWebhookUrl(
      body.integrations_config_defaults,
      body.webhook_url_override,
    );
    return this.insert(caller, {
      endUser,
      tags: buildSessionTags(body.end_user, body.organization, body.tags),
      allowedIntegrations: [body.integration_id],
      defaults,
      overrides: body.overrides ?? null,
      webhookUrlOverride,
      reconnectConnectionId: body.connection_id,
    });
  }

  async verify(tokenHash: string): Promise<VerifiedConnectSession> {
    const row = await this.db.connectSession.findUnique({
      where: { tokenHash },
      include: { environment: true },
    });
    if (!row || row.expiresAt.getTime() <= Date.now()) throw unknownToken();
    return {
      sessionId: row.id,
      caller: {
        accountId: row.environment.accountId,
        environmentId: row.environmentId,
        environmentUuid: row.environment.uuid,
        environmentName: row.environment.name,
      },
      allowedIntegrations: (row.allowedIntegrations as string[] | null) ?? null,
      expiresAt: row.expiresAt.toISOString(),
    };
  }

  async view(caller: Caller, sessionId: number): Promise<ConnectSessionView> {
    const session = await this.load(caller, sessionId);
    const view: ConnectSessionView = { endUser: session.endUser, connectUISettings: CONNECT_UI_SETTINGS };
    if (session.allowedIntegrations) view.allowed_integrations = session.allowedIntegrations;
    if (Object.keys(session.defaults).length > 0) {
      view.integrations_config_defaults = Object.fromEntries(
        Object.entries(session.defaults).map(([key, value]) => [
          key,
          {
            ...(value.connection_config
              ? { connection_config: browserSafeConnectionConfig(value.connection_config) }
              : {}),
            ...(value.authorization_params ? { authorization_params: value.authorization_params } : {}),
          },
        ]),
      );
    }
    if (session.reconnectConnectionId) view.isReconnecting = true;
    if (session.overrides) view.overrides = session.overrides;
    return view;
  }

  async delete(caller: Caller, sessionId: number): Promise<{ success: true }> {
    const { count } = await this.db.connectSession.deleteMany({
      where: { id: sessionId, environmentId: caller.environmentId },
    });
    if (count === 0) throw unknownToken();
    return { success: true };
  }

  /** The session behind a verified token, refused once it expired or was deleted meanwhile. */
  async load(caller: Caller, sessionId: number): Promise<LoadedSession> {
    const row = await this.db.connectSession.findFirst({
      where: { id: sessionId, environmentId: caller.environmentId },
    });
    if (!row || row.expiresAt.getTime() <= Date.now()) throw unknownToken();
    return this.toLoaded(row);
  }

  /**
   * The session of a redirect flow coming back from the provider: no token is presented there, the
   * single-use state stands for it. The state outlives neither its session row nor its own expiry.
   */
  async loadForCallback(sessionId: number): Promise<{ caller: Caller; session: LoadedSession } | undefined> {
    const row = await this.db.connectSession.findUnique({
      where: { id: sessionId },
      include: { environment: true },
    });
    if (!row) return undefined;
    const caller: Caller = {
      accountId: row.environment.accountId,
      environmentId: row.environmentId,
      environmentUuid: row.environment.uuid,
      environmentName: row.environment.name,
    };
    return { caller, session: this.toLoaded(row) };
  }

  private toLoaded(row: SessionRow): LoadedSession {
    return {
      id: row.id,
      environmentId: row.environmentId,
      endUser: (row.endUser as EndUser | null) ?? null,
      tags: (row.tags as Record<string, string> | null) ?? {},
      allowedIntegrations: (row.allowedIntegrations as string[] | null) ?? null,
      defaults: row.secrets
        ? this.cipher.decryptJson<Record<string, ConnectIntegrationDefaults>>(
            row.secrets,
            secretsAad(row.tokenHash),
          )
        : {},
      overrides: (row.overrides as LoadedSession['overrides']) ?? null,
      webhookUrlOverride: row.webhookUrlOverride,
      reconnectConnectionId: row.reconnectConnectionId,
      expiresAt: row.expiresAt,
    };
  }

  private async insert(
    caller: Caller,
    session: Omit<LoadedSession, 'id' | 'environmentId' | 'expiresAt'>,
  ): Promise<ConnectSessionCreated> {
    const token = generateSessionToken();
    const tokenHash = hashSessionToken(token);
    const expiresAt = new Date(Date.now() + CONNECT_SESSION_TTL_MS);
    // Expired sessions are useless; clearing them here keeps the table at "sessions of the last 30 minutes".
    await this.db.connectSession.deleteMany({
      where: { environmentId: caller.environmentId, expiresAt: { lt: new Date() } },
    });
    await this.db.connectSession.create({
      data: {
        environmentId: caller.environmentId,
        tokenHash,
        endUser: (session.endUser as Prisma.InputJsonValue | null) ?? Prisma.DbNull,
        tags: session.tags,
        allowedIntegrations: session.allowedIntegrations ?? Prisma.DbNull,
        secrets:
          Object.keys(session.defaults).length > 0
            ? this.cipher.encryptJson(session.defaults, secretsAad(tokenHash))
            : null,
        overrides: (session.overrides as Prisma.InputJsonValue | null) ?? Prisma.DbNull,
        webhookUrlOverride: session.webhookUrlOverride,
        reconnectConnectionId: session.reconnectConnectionId,
        expiresAt,
      },
    });
    const link = new URL(this.env.SWITCHBOARD_CONNECT_URL);
    link.searchParams.set('session_token', token);
    return { token, connect_link: link.toString(), expires_at: expiresAt.toISOString() };
  }

  private keyedPaths(field: string, record: Record<string, unknown> | undefined) {
    return Object.keys(record ?? {}).map((key) => ({ key, path: [field, key] }));
  }

  /**
   * `integrations_config_defaults.<key>.connection_config` lands in the connection like the page's values:
   * the same catalog patterns apply, so a session cannot point a token URL at a host the provider does not
   * use either (the flow checks again when it runs).
   */
  private async checkDefaultsHosts(
    caller: Caller,
    defaults: Record<string, ConnectIntegrationDefaults> | undefined,
  ): Promise<void> {
    const keys = Object.keys(defaults ?? {});
    if (keys.length === 0) return;
    const rows = await this.db.integration.findMany({
      where: { environmentId: caller.environmentId, uniqueKey: { in: keys } },
      select: { uniqueKey: true, provider: true },
    });
    const errors: FieldError[] = [];
    for (const row of rows) {
      const provider = this.providers.find(row.provider);
      const config = defaults?.[row.uniqueKey]?.connection_config;
      if (!provider || !config) continue;
      for (const [name, problem] of connectionConfigValueProblems(provider, config)) {
        errors.push({
          code: 'invalid_format',
          message: `${name} ${problem}`,
          path: ['integrations_config_defaults', row.uniqueKey, 'connection_config', name],
        });
      }
    }
    if (errors.length > 0) throw invalid('Invalid body', errors);
  }

  /** Every integration a session names must exist, each missing one reported at its own path. */
  private async checkIntegrationsExist(
    caller: Caller,
    refs: { key: string; path: (string | number)[] }[],
  ): Promise<void> {
    if (refs.length === 0) return;
    const rows = await this.db.integration.findMany({
      where: { environmentId: caller.environmentId, uniqueKey: { in: [...new Set(refs.map((r) => r.key))] } },
      select: { uniqueKey: true },
    });
    const existing = new Set(rows.map((r) => r.uniqueKey));
    const errors = refs
      .filter((ref) => !existing.has(ref.key))
      .map((ref) => ({ code: 'custom', message: `Integration "${ref.key}" does not exist`, path: ref.path }));
    if (errors.length > 0) throw invalid('Invalid body', errors);
  }
}

/**
 * `integrations_config_defaults.<key>.connection_config.webhook_url` predates `webhook_url_override`;
 * like Nango, it is moved there (the top-level field wins) and dropped from the connection config.
 */
function hoistDeprecatedWebhookUrl(
  defaults: Record<string, ConnectIntegrationDefaults> | undefined,
  topLevel: string | undefined,
): { defaults: Record<string, ConnectIntegrationDefaults>; webhookUrlOverride: string | null } {
  let hoisted: string | undefined;
  const cleaned: Record<string, ConnectIntegrationDefaults> = {};
  for (const [key, value] of Object.entries(defaults ?? {})) {
    const config = value.connection_config;
    if (config && typeof config['webhook_url'] === 'string') {
      const { webhook_url, ...rest } = config;
      hoisted ??= webhook_url as string;
      cleaned[key] = { ...value, connection_config: rest };
    } else {
      cleaned[key] = value;
    }
  }
  const chosen = topLevel ?? hoisted;
  if (chosen !== undefined && chosen !== '' && !isHttpUrl(chosen)) {
    throw invalid('Invalid body', [
      {
        code: 'invalid_format',
        message: 'must be an http:// or https:// URL',
        path: ['webhook_url_override'],
      },
    ]);
  }
  return { defaults: cleaned, webhookUrlOverride: chosen ? chosen : null };
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

/**
 * What the end user's browser may see of the defaults: a client secret the customer chose stays on the
 * server; an empty one is kept, because it is the signal to ask the end user for their own OAuth app.
 */
function browserSafeConnectionConfig(config: Record<string, unknown>): Record<string, unknown> {
  const { oauth_client_secret_override, ...rest } = config;
  return oauth_client_secret_override === '' ? { ...rest, oauth_client_secret_override: '' } : rest;
}

export function endUserFromRow(row: {
  endUserId: string;
  email: string | null;
  displayName: string | null;
  tags: unknown;
  organizationId: string | null;
  organizationDisplayName: string | null;
}): EndUser {
  return {
    id: row.endUserId,
    email: row.email,
    display_name: row.displayName,
    tags: (row.tags as Record<string, string> | null) ?? null,
    organization: row.organizationId
      ? { id: row.organizationId, display_name: row.organizationDisplayName }
      : null,
  };
}
