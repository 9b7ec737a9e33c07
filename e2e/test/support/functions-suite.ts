import { rmSync } from 'node:fs';
import { Nango } from '@nangohq/node';
import type { Stack } from '@switchboard/testing';
import { Client, Connection } from '@temporalio/client';
import { startItemsProvider, type ItemsProvider } from './functions-fakes';
import { call } from './http';
import { nangoDeploy, prepareProject } from './nango-cli';
import { WebhookReceiver } from './webhook-receiver';

export const API_KEY = 'fakehub-api-key';
export const CONNECTION = 'conn-fakehub';
/** The path the auth webhooks of imported connections are routed to (`importKey`). */
export const IMPORT_HOOKS = '/import-hooks';

/** A function as the functions API lists or describes it. */
export interface Listed {
  type: string;
  name: string;
  [key: string]: unknown;
}

/**
 * The world of the functions specs: the `fakehub` integration (the `fake-api-key` catalog entry) with one
 * connection, CONNECTION, to a fake items provider, a webhook receiver, and a copy of the
 * `functions-project` fixture. `start` sets it up on the stack it is given; `deploy` deploys the project
 * with the nango CLI, for the files whose tests need its functions there from the start.
 */
export class FunctionsSuite {
  stack!: Stack;
  provider!: ItemsProvider;
  receiver!: WebhookReceiver;
  nango!: Nango;
  temporal!: Client;
  project!: string;
  private temporalConnection: Connection | undefined;

  async start(startStack: () => Promise<Stack>): Promise<void> {
    [this.provider, this.receiver] = await Promise.all([
      startItemsProvider(API_KEY),
      new WebhookReceiver().start(),
    ]);
    this.stack = await startStack();
    this.nango = new Nango({ secretKey: this.stack.secretKey, host: this.stack.gatewayUrl });
    this.temporalConnection = await Connection.connect({
      address: this.stack.envOf('sync-orchestrator').TEMPORAL_ADDRESS!,
    });
    this.temporal = new Client({ connection: this.temporalConnection });
    expect(
      (await this.api('POST', '/integrations', { provider: 'fake-api-key', unique_key: 'fakehub' })).status,
    ).toBe(200);
    // Imported before any validate-connection script is deployed: nothing checks this one.
    const imported = await this.api('POST', '/connections', {
      provider_config_key: 'fakehub',
      connection_id: CONNECTION,
      credentials: { type: 'API_KEY', apiKey: API_KEY },
      connection_config: { origin: this.provider.url, account: 'acme' },
    });
    expect([200, 201]).toContain(imported.status);
    this.project = prepareProject('functions-project');
  }

  /** Deploys the project with the nango CLI: its actions, its sync and its on-event scripts. */
  async deploy(): Promise<void> {
    const run = await nangoDeploy(this.project, this.stack.gatewayUrl, this.stack.secretKey);
    expect({ code: run.code, stdout: run.stdout }).toEqual({
      code: 0,
      stdout: expect.stringContaining('Successfully deployed the functions'),
    });
  }

  async stop(): Promise<void> {
    await this.temporalConnection?.close();
    await this.stack?.stop();
    await Promise.all([this.provider?.close(), this.receiver?.stop()]);
    if (this.project) rmSync(this.project, { recursive: true, force: true });
  }

  /** A request to the gateway with the environment's secret key, or `key`. */
  api = (method: string, path: string, body?: unknown, key?: string) =>
    call(this.stack.gatewayUrl, method, path, {
      key: key ?? this.stack.secretKey,
      ...(body !== undefined ? { body } : {}),
    });

  /**
   * A raw `POST /action/trigger` of an action on CONNECTION, for what the official client hides (the status,
   * the run id header, 202 answers); `headers` adds e.g. X-Async and X-Max-Retries.
   */
  trigger = (action: string, input: unknown, headers: Record<string, string> = {}) =>
    call(this.stack.gatewayUrl, 'POST', '/action/trigger', {
      key: this.stack.secretKey,
      headers: { 'connection-id': CONNECTION, 'provider-config-key': 'fakehub', ...headers },
      body: { action_name: action, input },
    });

  /** An import of a fakehub key, its auth webhooks routed to IMPORT_HOOKS. */
  importKey = (connectionId: string, apiKey: string, account = 'acme') =>
    this.api('POST', '/connections', {
      provider_config_key: 'fakehub',
      connection_id: connectionId,
      credentials: { type: 'API_KEY', apiKey },
      connection_config: { origin: this.provider.url, account },
      webhook_url_override: `${this.receiver.url}${IMPORT_HOOKS}`,
    });

  /** The ids of the listed connections with this id (none, or this one). */
  listedIds = async (connectionId: string) => {
    const listed = await this.api('GET', `/connections?connectionId=${connectionId}`);
    expect(listed.status).toBe(200);
    return (listed.body as { connections: { connection_id: string }[] }).connections.map(
      (c) => c.connection_id,
    );
  };
}
