import { rmSync } from 'node:fs';
import { Nango } from '@nangohq/node';
import type { SyncStatusItem } from '@switchboard/contracts';
import { startStack, type Stack } from '@switchboard/testing';
import { Webhook } from 'standardwebhooks';
import { finishedRuns, runFailedSince } from './support/barriers';
import { nangoDeploy, prepareProject } from './support/nango-cli';
import { START_HOOK_TIMEOUT_MS, STACK_READY_TIMEOUT_MS, waitFor } from './support/processes';
import { writeProxyProvidersFile } from './support/proxy-fakes';
import { ContactsProvider, loopbackEgress, setUpRecordhub } from './support/syncs-fakes';
import { headerRecord, WebhookReceiver } from './support/webhook-receiver';

jest.setTimeout(180_000);

const API_KEY = 'recordhub-api-key';
const KEY = 'recordhub';
const CONNECTION = 'conn-timeout';
const SYNC = 'contacts';
const CONTACTS = 1500;
/** The stack's sync timeout (`SWITCHBOARD_SYNC_TIMEOUT_MS`, 24 h by default): long enough for a whole run here. */
const SYNC_TIMEOUT_MS = 20_000;

interface ListedContact {
  id: string;
  _nango_metadata: { deleted_at: string | null };
}

/**
 * A sync run that outlives the sync timeout, through the public surface: the run ends as an error (status,
 * signed `sync` webhook with `success: false`), the script stops asking the provider for pages, nothing it
 * did not see is deleted (the fixture tracks deletes), its checkpoint stays, and the next run resumes there.
 */
describe('a sync run longer than the sync timeout', () => {
  let stack: Stack;
  let provider: ContactsProvider;
  let receiver: WebhookReceiver;
  let nango: Nango;
  let project: string;
  let signingKey: string;

  const status = async () =>
    ((await nango.syncStatus(KEY, [SYNC], CONNECTION)).syncs as unknown as SyncStatusItem[])[0];

  /** The sync's status once a run that finished after `after` (epoch ms) is recorded. */
  const finishedAfter = (after: number) =>
    waitFor(
      'a finished run',
      async () => {
        const item = await status();
        return item && item.status !== 'RUNNING' && item.finishedAt && Date.parse(item.finishedAt) > after
          ? item
          : undefined;
      },
      SYNC_TIMEOUT_MS + 90_000,
      300,
    );

  const liveContacts = async () => {
    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { records: ListedContact[]; next_cursor: string | null } = (await nango.listRecords({
        providerConfigKey: KEY,
        connectionId: CONNECTION,
        model: 'Contact',
        limit: 1000,
        ...(cursor ? { cursor } : {}),
      })) as never;
      ids.push(...page.records.filter((r) => r._nango_metadata.deleted_at === null).map((r) => r.id));
      cursor = page.next_cursor;
    } while (cursor);
    return ids.sort();
  };

  const syncHooks = () =>
    receiver.received
      .filter((h) => h.path === '/hooks')
      .map((h) => ({ hook: h, body: JSON.parse(h.body) as Record<string, unknown> }))
      .filter((h) => h.body.type === 'sync');

  beforeAll(async () => {
    [provider, receiver] = await Promise.all([
      new ContactsProvider(API_KEY, CONTACTS).start(),
      new WebhookReceiver().start(),
    ]);
    stack = await startStack({
      env: { SWITCHBOARD_PROVIDERS_FILE: writeProxyProvidersFile() },
      serviceEnv: loopbackEgress({
        'sync-orchestrator': { SWITCHBOARD_SYNC_TIMEOUT_MS: String(SYNC_TIMEOUT_MS) },
      }),
      // Seven services and the CLI's build share two cores with other suites.
      readyTimeoutMs: 2 * STACK_READY_TIMEOUT_MS,
    });
    nango = new Nango({ secretKey: stack.secretKey, host: stack.gatewayUrl });
    signingKey = await setUpRecordhub(stack, provider, API_KEY, [CONNECTION], `${receiver.url}/hooks`);
    project = prepareProject('syncs-project');
    const deployed = await nangoDeploy(project, stack.gatewayUrl, stack.secretKey);
    expect({ code: deployed.code, stdout: deployed.stdout }).toEqual({
      code: 0,
      stdout: expect.stringContaining('Successfully deployed the functions'),
    });
    // The first run (autoStart) fetches everything well within the timeout.
    expect(await finishedAfter(0)).toMatchObject({ status: 'SUCCESS', recordCount: { Contact: CONTACTS } });
  }, 2 * START_HOOK_TIMEOUT_MS);

  afterAll(async () => {
    await stack?.stop();
    await Promise.all([provider?.close(), receiver?.stop()]);
    if (project) rmSync(project, { recursive: true, force: true });
  });

  it('ends the run as an error, stops its script, deletes nothing it did not see, and the next run resumes from its checkpoint', async () => {
    const everyone = await liveContacts();
    expect(everyone).toHaveLength(CONTACTS);
    // The provider never answers the second page while the run lasts.
    const held = provider.hold('500');
    const triggeredAt = Date.now();
    await nango.triggerSync(KEY, [SYNC], CONNECTION);
    await held.requested;
    const runsBefore = finishedRuns(stack).length;

    const failed = await finishedAfter(triggeredAt);
    const lasted = Date.parse(failed.finishedAt!) - triggeredAt;
    expect(failed).toMatchObject({
      status: 'ERROR',
      // Nango's job status of a failed run.
      latestExecutionStatus: 'STOPPED',
      // What the run saved before it stopped stays the next run's starting point.
      checkpoint: { cursor: '500' },
      recordCount: { Contact: CONTACTS },
    });
    expect(lasted).toBeGreaterThanOrEqual(SYNC_TIMEOUT_MS);
    expect(lasted).toBeLessThan(SYNC_TIMEOUT_MS + 60_000);

    // The customer hears of it: a signed sync webhook with success false and why.
    const hook = await waitFor('the failure webhook', async () =>
      syncHooks().find((h) => h.body.success === false),
    );
    expect(hook.body).toMatchObject({
      type: 'sync',
      connectionId: CONNECTION,
      providerConfigKey: KEY,
      syncName: SYNC,
      syncVariant: 'base',
      success: false,
      error: { type: 'script_error', description: expect.stringContaining(`${SYNC_TIMEOUT_MS} ms`) },
    });
    expect(() =>
      new Webhook(signingKey).verify(hook.hook.body, headerRecord(hook.hook.headers)),
    ).not.toThrow();

    // Its script is gone: the page it waited for, released now, leads to no further request (its run has
    // ended in functions-runtime, as a failure).
    const pagesBefore = provider.pages.length;
    held.release();
    await runFailedSince(stack, runsBefore);
    expect(provider.pages.slice(pagesBefore)).toEqual([]);
    // Track deletes ran for no one: the contacts the run never reached are all there.
    expect(await liveContacts()).toEqual(everyone);

    // The next run starts at the checkpoint and finishes.
    const retriedAt = Date.now();
    const from = provider.pages.length;
    await nango.triggerSync(KEY, [SYNC], CONNECTION);
    expect(await finishedAfter(retriedAt)).toMatchObject({
      status: 'SUCCESS',
      checkpoint: null,
      recordCount: { Contact: CONTACTS },
    });
    expect(provider.pages.slice(from).map((p) => p.cursor)).toEqual(['500', '1000']);
    expect(await liveContacts()).toEqual(everyone);
  });
});
