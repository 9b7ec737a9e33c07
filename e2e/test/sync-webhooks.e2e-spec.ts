import { createHmac, randomUUID } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Nango } from '@nangohq/node';
import { EVENT_CONSUMERS } from '@switchboard/contracts';
import { startStack, type Stack } from '@switchboard/testing';
import { consumerDrained } from './support/barriers';
import { call } from './support/http';
import { nangoDeploy, prepareProject } from './support/nango-cli';
import { START_HOOK_TIMEOUT_MS, STACK_READY_TIMEOUT_MS } from './support/processes';
import { writeProxyProvidersFile } from './support/proxy-fakes';
import { linearIntegration, sendLinearWebhook } from './support/webhook-events';

jest.setTimeout(180_000);

/** The CLI compiles and typechecks the fixture project before it deploys (slow on a busy 2-core machine). */
const DEPLOY_TIMEOUT_MS = 120_000;

const LINEAR_SECRET = `lin-${randomUUID()}`;

/**
 * A sync's `onWebhook` handler through the public surface: the official `nango` CLI deploys a sync that
 * subscribes to Linear's `Issue` webhooks, signed Linear webhooks come in at `/webhook/...`, the relay
 * routes them to the connection of their organization, and the handler runs on Temporal for that
 * connection only. It saves the issue with `batchSave` (read back with `listRecords`) and appends what it
 * saw to the connection's metadata (read with `getMetadata`), both through `@nangohq/node`.
 */
describe("syncs' onWebhook handlers", () => {
  let stack: Stack;
  let nango: Nango;
  let project: string;

  const api = (method: string, path: string, body?: unknown) =>
    call(stack.gatewayUrl, method, path, { key: stack.secretKey, ...(body !== undefined ? { body } : {}) });

  const linearWebhook = async (organizationId: string, type: string, action: string, id: string) => {
    const body = {
      action,
      type,
      organizationId,
      data: { id, title: `title of ${id}` },
      webhookTimestamp: Date.now(),
    };
    expect((await sendLinearWebhook(stack, body, LINEAR_SECRET, type)).status).toBe(200);
  };

  /** Every webhook received so far has been routed by the relay, and every routed one started its syncs' runs. */
  const routed = async () => {
    await consumerDrained(stack.natsUrl, EVENT_CONSUMERS.relayProviderWebhook);
    await consumerDrained(stack.natsUrl, EVENT_CONSUMERS.orchestratorSyncWebhook);
  };

  const seenBy = async (connectionId: string): Promise<string[]> =>
    ((await nango.getMetadata<{ webhooks?: string[] }>('linear', connectionId)) ?? {}).webhooks ?? [];

  const waitForSeen = async (connectionId: string, entry: string): Promise<string[]> => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const seen = await seenBy(connectionId);
      if (seen.includes(entry) || Date.now() > deadline) return seen;
      await new Promise((r) => setTimeout(r, 250));
    }
  };

  beforeAll(
    async () => {
      stack = await startStack({
        env: {
          SWITCHBOARD_PROVIDERS_FILE: writeProxyProvidersFile(),
          // Longer than the whole spec: only a dropped answer lets a new subscription be seen.
          SWITCHBOARD_WEBHOOK_SUBSCRIPTIONS_CACHE: '10m',
        },
        // Twice the usual wait: these stacks also bundle the workflows and run the CLI on a shared 2-core host.
        readyTimeoutMs: 2 * STACK_READY_TIMEOUT_MS,
      });
      nango = new Nango({ secretKey: stack.secretKey, host: stack.gatewayUrl });
      const integration = await api('POST', '/integrations', linearIntegration(LINEAR_SECRET));
      expect(integration.status).toBe(200);
      for (const [id, org] of [
        ['conn-org-a', 'org-a'],
        ['conn-org-b', 'org-b'],
      ] as const) {
        const res = await api('POST', '/connections', {
          provider_config_key: 'linear',
          connection_id: id,
          credentials: { type: 'OAUTH2', access_token: `tok-${id}` },
          connection_config: { organizationId: org },
        });
        expect(res.status).toBe(201);
      }
      project = prepareProject('sync-webhooks-project');
      // The fixture project also holds a fakehub action and sync (for the tracing test): their integration must exist.
      expect(
        (await api('POST', '/integrations', { provider: 'fake-api-key', unique_key: 'fakehub' })).status,
      ).toBe(200);
      const deployed = await nangoDeploy(project, stack.gatewayUrl, stack.secretKey);
      expect({ code: deployed.code, stdout: deployed.stdout }).toEqual({
        code: 0,
        stdout: expect.stringContaining('Successfully deployed the functions'),
      });
    },
    START_HOOK_TIMEOUT_MS + STACK_READY_TIMEOUT_MS + DEPLOY_TIMEOUT_MS,
  );

  afterAll(async () => {
    await stack?.stop();
    if (project) rmSync(project, { recursive: true, force: true });
  });

  it("runs the sync's onWebhook with the provider's payload for the connection the webhook is routed to, and no other", async () => {
    await linearWebhook('org-a', 'Issue', 'create', 'iss-1');
    expect(await waitForSeen('conn-org-a', 'Issue:create:iss-1')).toEqual(['Issue:create:iss-1']);

    // A type the sync does not subscribe to runs nothing; the next subscribed one runs (after it).
    await linearWebhook('org-a', 'Comment', 'create', 'com-1');
    await routed();
    await linearWebhook('org-a', 'Issue', 'update', 'iss-1');
    expect(await waitForSeen('conn-org-a', 'Issue:update:iss-1')).toEqual([
      'Issue:create:iss-1',
      'Issue:update:iss-1',
    ]);
    // The other connection of the integration got nothing of org-a's webhooks.
    expect(await seenBy('conn-org-b')).toEqual([]);

    await linearWebhook('org-b', 'Issue', 'remove', 'iss-9');
    expect(await waitForSeen('conn-org-b', 'Issue:remove:iss-9')).toEqual(['Issue:remove:iss-9']);
    expect(await seenBy('conn-org-a')).toEqual(['Issue:create:iss-1', 'Issue:update:iss-1']);

    // What the handler saved with batchSave is each connection's records (the update changed iss-1).
    const records = async (connectionId: string) =>
      (
        await nango.listRecords({ providerConfigKey: 'linear', connectionId, model: 'LinearIssue' })
      ).records.map((r) => ({
        id: r.id,
        title: r.title,
        action: r.action,
        last: r._nango_metadata.last_action,
      }));
    expect(await records('conn-org-a')).toEqual([
      { id: 'iss-1', title: 'title of iss-1', action: 'update', last: 'UPDATED' },
    ]);
    expect(await records('conn-org-b')).toEqual([
      { id: 'iss-9', title: 'title of iss-9', action: 'remove', last: 'ADDED' },
    ]);
  });

  it('runs a handler once for a webhook the provider delivers twice (same delivery id)', async () => {
    const text = JSON.stringify({
      action: 'create',
      type: 'Issue',
      organizationId: 'org-b',
      data: { id: 'iss-twice', title: 't' },
      webhookTimestamp: Date.now(),
    });
    const delivery = randomUUID();
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${stack.gatewayUrl}/webhook/${stack.environmentUuid}/linear`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'linear-signature': createHmac('sha256', LINEAR_SECRET).update(text).digest('hex'),
          'linear-delivery': delivery,
        },
        body: text,
      });
      expect(res.status).toBe(200);
    }
    await waitForSeen('conn-org-b', 'Issue:create:iss-twice');
    // Both deliveries routed, and every routed one handed to its sync; a marker after them: once it is seen,
    // a second run of the first would have been seen too.
    await routed();
    await linearWebhook('org-b', 'Issue', 'update', 'iss-marker');
    const seen = await waitForSeen('conn-org-b', 'Issue:update:iss-marker');
    expect(seen.filter((s) => s === 'Issue:create:iss-twice')).toHaveLength(1);
  });

  it('a deploy that subscribes a sync to a new type routes the next webhook of that type to it', async () => {
    // The relay now caches "no sync reads Comment" for this integration (10 minutes in this stack), and
    // the Issue after it shows the relay has handled the Comment (one consumer, in order).
    await linearWebhook('org-a', 'Comment', 'create', 'com-before');
    await linearWebhook('org-a', 'Issue', 'create', 'iss-marker-a');
    await waitForSeen('conn-org-a', 'Issue:create:iss-marker-a');

    const deployed = await api('POST', '/sync/deploy', {
      flowConfigs: [
        {
          syncName: 'comments',
          providerConfigKey: 'linear',
          type: 'sync',
          models: ['LinearIssue'],
          runs: 'every day',
          auto_start: false,
          webhookSubscriptions: ['Comment'],
          fileBody: { js: readFileSync(join(project, 'build', 'linear_syncs_issues.cjs'), 'utf8'), ts: '' },
        },
      ],
      deployMode: 'single',
      reconcile: false,
    });
    expect(deployed.status).toBe(200);
    // The deploy dropped the cached answer: the next Comment reaches the new sync's handler.
    await linearWebhook('org-a', 'Comment', 'create', 'com-after');
    const seen = await waitForSeen('conn-org-a', 'Comment:create:com-after');
    expect(seen.filter((entry) => entry.startsWith('Comment:'))).toEqual(['Comment:create:com-after']);
  });
});
