import { randomUUID } from 'node:crypto';
import { Nango } from '@nangohq/node';
import type { Stack } from '@switchboard/testing';
import { connect, type NatsConnection } from 'nats';
import { Client } from 'pg';
import { call, failure, type ApiResponse } from './http';
import { standardStack } from './standard-stack';

/** A timestamp as Nango writes it: milliseconds and an explicit `+00:00`. */
export const PLUS_ZERO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$/;

/**
 * The end users, organisations and tags of the three API-key connections the list tests import
 * (list-a oldest, list-c newest), and that the patch, metadata and delete tests then change.
 */
export const LIST_CONNECTIONS = [
  ['list-a', 'u-a', 'org-1', { plan: 'free', region: 'eu' }],
  ['list-b', 'u-b', 'org-1', { plan: 'pro', region: 'eu' }],
  ['list-c', 'u-c', 'org-2', { plan: 'pro', region: 'us' }],
] as const;

/**
 * The world of the connections spec: the worker's standard stack, the official client on its gateway,
 * the stack's database and NATS, and two integrations of this run (`gh`, GitHub with OAuth 2 app
 * credentials, and `keys`, Anthropic with API keys). Every credential a test makes with `secret` is
 * remembered, so that the spec can look for each of them where none may appear (rows, logs, answers).
 */
export class ConnectionsWorld {
  stack!: Stack;
  nango!: Nango;
  db!: Client;
  nc!: NatsConnection;
  /** Before the first write of the file: where its auth events start on the stream. */
  readonly startedAt = new Date(Date.now() - 1000);
  readonly secrets: string[] = [];
  readonly run = randomUUID().slice(0, 8);
  readonly gh = `gh-${this.run}`;
  readonly keys = `keys-${this.run}`;

  async start(): Promise<void> {
    this.stack = await standardStack();
    this.nango = new Nango({ secretKey: this.stack.secretKey, host: this.stack.gatewayUrl });
    this.db = new Client({ connectionString: this.stack.databaseUrl });
    await this.db.connect();
    this.nc = await connect({ servers: this.stack.natsUrl });
    await this.nango.createIntegration({
      provider: 'github',
      unique_key: this.gh,
      credentials: { type: 'OAUTH2', client_id: 'cid', client_secret: this.secret('cs') },
    });
    await this.nango.createIntegration({ provider: 'anthropic', unique_key: this.keys });
  }

  async stop(): Promise<void> {
    await this.nc?.close();
    await this.db?.end();
    await this.stack?.stop();
  }

  /** A credential value unique to this call, with a marker no log line or answer may carry. */
  secret = (prefix: string): string => {
    const value = `${prefix}_SENTINEL_${randomUUID().replace(/-/g, '')}`;
    this.secrets.push(value);
    return value;
  };

  /** A raw request to the gateway with the environment's secret key, and a JSON body when one is given. */
  api = (method: string, path: string, body?: unknown): Promise<ApiResponse> =>
    call(this.stack.gatewayUrl, method, path, {
      key: this.stack.secretKey,
      ...(body !== undefined ? { body } : {}),
    });

  /** POST /connections (the import, which the official client has no method for), with `key` if given. */
  importConnection = (body: Record<string, unknown>, key?: string): Promise<ApiResponse> =>
    call(this.stack.gatewayUrl, 'POST', '/connections', { key: key ?? this.stack.secretKey, body });

  /** Imports the connections of LIST_CONNECTIONS in order, each answered 201. */
  async importListConnections(): Promise<void> {
    for (const [id, user, org, tags] of LIST_CONNECTIONS) {
      const res = await this.importConnection({
        provider_config_key: this.keys,
        connection_id: id,
        credentials: { type: 'API_KEY', apiKey: this.secret('key') },
        end_user: {
          id: user,
          display_name: `Person ${user}`,
          email: `${user}@example.com`,
          organization: { id: org },
        },
        tags: { ...tags },
      });
      expect(res.status).toBe(201);
    }
  }
}

/** Asserts that the official client's call failed with `status` and an error of `code` as its whole body. */
export async function expectClientError(
  promise: Promise<unknown>,
  status: number,
  code: string,
): Promise<void> {
  expect(await failure(promise)).toEqual({
    status,
    data: { error: expect.objectContaining({ code }) },
  });
}
