import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import {
  refreshTokenResultSchema,
  type ApiProvider,
  type ApiPublicConnectionFull,
  type Credentials,
  type ImportConnectionRequest,
  type ImportCredentials,
  AUTH_INTERNAL_REQUESTS,
  INTEGRATION_REQUESTS,
  PROVIDER_REQUESTS,
} from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import { connectionConfigValueProblems, type HostFieldsProviderShape } from '@switchboard/providers';
import { VaultError } from '../../vault.errors';
import { endUserFromInput, toFullConnection } from '../connection-view';
import { AcceptConnection } from './accept-connection';

/**
 * `POST /connections`: stores a connection whose credentials the caller already has (a migration from
 * another platform). The integration must exist and its provider's auth mode must match the credentials.
 * GitHub App connections (APP, CUSTOM) carry only the installation; auth-connect mints their token.
 * The integration's validate-connection scripts accept or refuse the credentials before anything is
 * stored (`AcceptConnection`, as at the end of a connect flow); an import over an existing connection id
 * is checked like a reconnect, and a refusal leaves the stored connection as it was.
 */
@Injectable()
export class ImportConnection {
  constructor(
    private readonly nats: NatsRequester,
    private readonly accept: AcceptConnection,
  ) {}

  async execute(req: ImportConnectionRequest): Promise<ApiPublicConnectionFull> {
    const { caller, body } = req;
    const integration = await this.nats.call(INTEGRATION_REQUESTS.get, {
      caller,
      uniqueKey: body.provider_config_key,
      include: { webhook: false, credentials: false },
    });
    const provider = await this.nats.call(PROVIDER_REQUESTS.get, {
      name: integration.provider,
    });
    refuseUnfitBody(integration.provider, provider, body);

    const connectionId = body.connection_id ?? randomUUID();
    let connectionConfig: Record<string, unknown> = { ...(body.connection_config ?? {}) };
    let credentials: Credentials;
    const input = body.credentials;
    if (input.type === 'APP' || input.type === 'CUSTOM') {
      connectionConfig = {
        ...connectionConfig,
        app_id: input.app_id,
        installation_id: input.installation_id,
      };
      credentials = await this.mintAppCredentials(
        caller.environmentId,
        body.provider_config_key,
        connectionId,
        input.type,
        connectionConfig,
      );
    } else {
      if (input.type === 'TBA' && !connectionConfig['accountId']) {
        throw new VaultError(
          'invalid_body',
          'Missing accountId in connection_config; a TBA connection needs it',
          [
            {
              code: 'invalid_type',
              message: 'Required for TBA connections',
              path: ['connection_config', 'accountId'],
            },
          ],
        );
      }
      credentials = storedCredentials(input);
    }

    const key = {
      environmentId: caller.environmentId,
      providerConfigKey: body.provider_config_key,
      connectionId,
    };
    const { row } = await this.accept.execute({
      caller,
      key,
      provider: integration.provider,
      credentials,
      connectionConfig,
      metadata: body.metadata,
      tags: body.tags,
      endUser: body.end_user ? endUserFromInput(body.end_user) : undefined,
      webhookUrlOverride:
        body.webhook_url_override === undefined ? undefined : body.webhook_url_override || null,
      announceRefusedOverride: false,
    });
    return req.includeCredentials
      ? toFullConnection(row, credentials, false, connectionConfig)
      : toFullConnection(row, undefined, false);
  }

  private async mintAppCredentials(
    environmentId: number,
    providerConfigKey: string,
    connectionId: string,
    type: 'APP' | 'CUSTOM',
    connectionConfig: Record<string, unknown>,
  ): Promise<Credentials> {
    const answer = await this.nats.call(AUTH_INTERNAL_REQUESTS.refresh, {
      environmentId,
      providerConfigKey,
      connectionId,
      credentials: { type },
      connectionConfig,
    });
    const parsed = refreshTokenResultSchema.safeParse(answer);
    if (!parsed.success) throw new VaultError('server_error', 'Could not create the app installation token');
    return parsed.data.credentials;
  }
}

/** The stored shape (Nango's): OAuth credentials keep the provider-style `raw` answer. */
function storedCredentials(input: Exclude<ImportCredentials, { type: 'APP' | 'CUSTOM' }>): Credentials {
  switch (input.type) {
    case 'OAUTH2':
    case 'OAUTH2_CC':
    case 'OAUTH1': {
      const { raw, ...rest } = input;
      const { type: _type, ...fields } = rest;
      return { ...rest, raw: raw ?? fields };
    }
    case 'API_KEY':
    case 'BASIC':
    case 'TBA':
    case 'NONE':
      return { ...input };
  }
}

/** The credentials must be of the provider's auth mode, and the config's host fields name its own domains. */
function refuseUnfitBody(
  providerName: string,
  provider: ApiProvider,
  body: ImportConnectionRequest['body'],
): void {
  if (provider.auth_mode !== body.credentials.type) {
    throw new VaultError(
      'invalid_body',
      `Provider ${providerName} uses ${provider.auth_mode} auth; it does not accept ${body.credentials.type} credentials`,
      [{ code: 'invalid_value', message: `must be ${provider.auth_mode}`, path: ['credentials', 'type'] }],
    );
  }

  // An imported connection is refreshed against the catalog's token URL like any other: its host fields
  // must name the provider's own domains, so the integration's client secret cannot be sent elsewhere.
  const problems = connectionConfigValueProblems(
    provider as unknown as HostFieldsProviderShape,
    body.connection_config ?? {},
  );
  if (problems.length > 0) {
    throw new VaultError(
      'invalid_body',
      'The connection config names a host or value the provider does not allow',
      problems.map(([name, message]) => ({
        code: 'invalid_format',
        message: `${name} ${message}`,
        path: ['connection_config', name],
      })),
    );
  }
}
