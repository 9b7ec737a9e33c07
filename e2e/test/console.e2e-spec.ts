import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, type Stack } from '@switchboard/testing';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from './support/chromium';
import {
  ARTIFACTS,
  checkPage,
  connectAsCustomer,
  createConsoleUser,
  deployFakehub,
  openConsolePage,
  pickProvider,
  postSignedWebhook,
  startConsoleStack,
  tabTo as tabToIn,
  type BrowserDocument,
  type FocusedElement,
  waitForTextChange,
} from './support/console-driver';
import { call, expectError } from './support/http';
import { nangoDeploy, prepareProject } from './support/nango-cli';
import { START_HOOK_TIMEOUT_MS } from './support/processes';
import { ContactsProvider } from './support/syncs-fakes';
import { WebhookReceiver } from './support/webhook-receiver';

/**
 * The console in a real browser (Debian's Chromium driven by playwright-core) against one running stack:
 * a team member signs in, creates an integration, sends a connect link and finishes it as the customer,
 * deploys a sync with the `nango` CLI, runs it and reads its records, redelivers a webhook, sets a webhook
 * public key, creates and revokes an API key, and signs out. Every page is checked with axe-core (no serious or critical
 * violation) and photographed into e2e/artifacts/console/.
 */

/** Functions given to page.evaluate run in the browser; the browser global they touch. */
declare const document: BrowserDocument;

jest.setTimeout(90_000);

// Console emails are unique across accounts, and every stack of the suite shares one database.
const EMAIL = `ada-${Math.random().toString(36).slice(2, 8)}@example.com`;
const PASSWORD = 'correct horse battery staple';
const API_KEY = 'recordhub-api-key';
const CONTACTS = 30;

describe('the console in Chromium', () => {
  let stack: Stack;
  let provider: ContactsProvider;
  let receiver: WebhookReceiver;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let project: string;
  let connectionId: string;
  let connectUrl: string;
  /** Anything the browser reported as an error (a CSP refusal, an uncaught exception). */
  const browserErrors: string[] = [];

  const console$ = (path: string) => `${stack.gatewayUrl}/console${path}`;

  const check = (name: string) => checkPage(page, name);
  const tabTo = (matches: (el: FocusedElement) => boolean, max?: number) => tabToIn(page, matches, max);

  beforeAll(async () => {
    provider = await new ContactsProvider(API_KEY, CONTACTS).start();
    receiver = await new WebhookReceiver().start();
    const connectPort = await freePort();
    connectUrl = `http://127.0.0.1:${connectPort}`;
    stack = await startConsoleStack(connectPort, connectUrl);
    await createConsoleUser(stack, EMAIL, 'admin', PASSWORD);
    project = prepareProject('syncs-project');
    browser = await launchChromium();
    ({ context, page } = await openConsolePage(browser, browserErrors));
  }, 2 * START_HOOK_TIMEOUT_MS);

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await stack?.stop();
    await Promise.all([provider?.close(), receiver?.stop()]);
    if (project) rmSync(project, { recursive: true, force: true });
  });

  afterEach(() => {
    // The app runs under the gateway's strict CSP: nothing it needs may be refused.
    expect(browserErrors.splice(0)).toEqual([]);
  });

  it('is served with a strict CSP and sends a signed-out visitor to sign in, which works with the keyboard alone', async () => {
    const index = await fetch(console$('/connections'));
    expect(index.status).toBe(200);
    expect(index.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(index.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(index.headers.get('cache-control')).toBe('no-cache');
    const asset = /src="(\/console\/assets\/[^"]+\.js)"/.exec(await index.text())?.[1];
    expect(asset).toBeDefined();
    expect((await fetch(`${stack.gatewayUrl}${asset!}`)).headers.get('cache-control')).toContain('immutable');

    await page.goto(console$('/connections'));
    await page.waitForURL(/\/console\/sign-in\?next=%2Fconnections/);
    await page.getByRole('heading', { name: 'Sign in to Switchboard' }).waitFor();
    await check('01-sign-in');

    // A wrong password shows the API's own message.
    await page.getByLabel('Email').fill(EMAIL);
    await page.getByLabel(/^Password/).fill('wrong password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'Sign-in failed' }).waitFor();
    await page.screenshot({ path: join(ARTIFACTS, '02-sign-in-refused.png'), fullPage: true });

    // Keyboard only: the email field has the focus on load, Tab to the password, Enter submits.
    await page.goto(console$('/sign-in?next=%2Fconnections'));
    await page.waitForFunction(() => document.activeElement?.getAttribute('type') === 'email');
    await page.keyboard.type(EMAIL);
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.getAttribute('autocomplete'))).toBe(
      'current-password',
    );
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/console\/connections$/);
    await page
      .getByTestId('signed-in-as')
      .filter({ hasText: `${EMAIL} (admin)` })
      .waitFor();
    const cookie = (await context.cookies()).find((c) => c.name === 'switchboard_console');
    expect(cookie).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Strict' });
  });

  it('creates an integration from the provider schema, and switches environments', async () => {
    await page.getByRole('link', { name: 'Integrations' }).click();
    await page.getByText('No integration yet.').waitFor();
    await page.getByRole('link', { name: 'New integration' }).click();
    await pickProvider(page, 'fake-api-key');
    await page.getByLabel('Unique key').fill('recordhub');
    await page.getByLabel('Display name').fill('Record Hub');
    await page.getByText('API_KEY integrations hold no credentials of their own').waitFor();
    await check('03-new-integration');
    await page.getByRole('button', { name: 'Create integration' }).click();
    await page.getByRole('heading', { name: 'Integration recordhub' }).waitFor();
    expect(await page.getByTestId('webhook-url').textContent()).toMatch(
      new RegExp(`^${stack.gatewayUrl}/webhook/[0-9a-f-]{36}/recordhub$`),
    );
    await check('04-integration');

    // Edit it: the new display name is stored and listed.
    const edit = page.getByRole('form', { name: 'Edit integration' });
    await edit.getByLabel('Display name').fill('Record Hub EU');
    await edit.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();

    // Creating it again, with the keyboard alone, is refused with the API's message: Tab to the provider,
    // type and pick it, Tab to the unique key, type it, Enter.
    await page.goto(console$('/integrations/new'));
    await page.getByRole('heading', { name: 'New integration' }).waitFor();
    await tabTo((el) => el.placeholder === 'Search a provider');
    await page.keyboard.type('fake-api-key');
    await page.getByRole('option', { name: /\(fake-api-key\)$/ }).waitFor();
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Enter');
    await tabTo((el) => el.tag === 'INPUT' && el.placeholder !== 'Search a provider', 5);
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.type('recordhub');
    await page.keyboard.press('Enter');
    await page.getByRole('alert').filter({ hasText: 'The integration was not created' }).waitFor();

    await page.getByRole('link', { name: 'Integrations' }).click();
    await page.getByRole('table', { name: 'Integrations' }).getByText('recordhub').waitFor();
    await page.getByRole('table', { name: 'Integrations' }).getByText('Record Hub EU').waitFor();
    await check('05-integrations');
    await page.getByLabel('Environment').selectOption('prod');
    await page.getByText('No integration yet.').waitFor();
    await page.getByLabel('Environment').selectOption('dev');
    await page.getByRole('table', { name: 'Integrations' }).getByText('recordhub').waitFor();
  });

  it('sets the webhook URL, sends a connect link made with the keyboard, and sees the connection appear', async () => {
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByLabel('Webhook URL', { exact: true }).fill(`${receiver.url}/hooks`);
    await page.getByLabel('A connection is created').check();
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByRole('status').filter({ hasText: 'Settings saved.' }).waitFor();
    await page.getByText('No delivery matches.').waitFor();

    await page.getByRole('link', { name: 'Connections' }).click();
    await page.getByText('No connection matches.').waitFor();
    await check('06-connections-empty');
    // Keyboard only: Tab to the button, Enter opens the dialog, type the end user, Enter creates the link.
    await tabTo((el) => el.text === 'Create connect link');
    await page.keyboard.press('Enter');
    await page.getByRole('dialog', { name: 'Create a connect link' }).waitFor();
    // The dialog puts the focus on its first field.
    await expect(
      page.getByLabel('End user id').evaluate((el) => (el as unknown) === document.activeElement),
    ).resolves.toBe(true);
    await page.keyboard.type('customer-42');
    await page.keyboard.press('Enter');
    const link = (await page.getByTestId('connect-link').textContent())!;
    expect(link.startsWith(connectUrl)).toBe(true);
    await check('07-connect-link');
    await page.keyboard.press('Escape');

    // The customer opens the link and connects.
    await connectAsCustomer(context, link, provider.url, API_KEY);

    await page.reload();
    const rows = page.getByRole('table', { name: 'Connections' }).getByRole('row');
    await rows.nth(1).getByText('recordhub').waitFor();
    await rows.nth(1).getByRole('cell', { name: 'customer-42', exact: true }).waitFor();
    connectionId = (await rows.nth(1).getByRole('link').textContent())!;
    // Server-side search and filters.
    await page.getByLabel('Search').fill('no-such-connection');
    await page.getByText('No connection matches.').waitFor();
    await page.getByLabel('Search').fill(connectionId);
    await rows.nth(1).getByRole('link', { name: connectionId }).waitFor();
    await page.getByLabel(/^Tags/).fill('end_user_id=customer-42');
    await rows.nth(1).getByRole('link', { name: connectionId }).waitFor();
    await page.getByLabel(/^Tags/).fill('end_user_id=someone-else');
    await page.getByText('No connection matches.').waitFor();
    await page.getByLabel(/^Tags/).fill('');
    await rows.nth(1).getByRole('link', { name: connectionId }).waitFor();
    await check('08-connections');
  });

  it('deploys a sync with the nango CLI, sees it and its code, then runs it and reads its records', async () => {
    const deploy = await nangoDeploy(project, stack.gatewayUrl, stack.secretKey);
    expect({ code: deploy.code, stdout: deploy.stdout }).toEqual({
      code: 0,
      stdout: expect.stringContaining('Successfully deployed the functions'),
    });
    await page.getByRole('link', { name: 'Functions' }).click();
    const row = page.getByTestId('function-contacts');
    await row.getByText('1.0.0').waitFor();
    await row.getByRole('button', { name: 'Open contacts' }).click();
    await page.getByTestId('function-code').filter({ hasText: 'batchSave' }).waitFor();
    await check('09-functions');
    await page.keyboard.press('Escape');

    await page.getByRole('link', { name: 'Connections' }).click();
    await page.getByRole('link', { name: connectionId }).click();
    await page.getByRole('heading', { name: `Connection ${connectionId}` }).waitFor();
    await page.getByTestId('credentials-masked').waitFor();
    const sync = page.getByTestId('sync-contacts');
    await sync.waitFor();
    await sync.getByRole('button', { name: 'Trigger contacts' }).click();
    // The page follows the run: its status, then the counts of the records it saved.
    await sync
      .getByTestId('sync-records')
      .filter({ hasText: `Contact: ${CONTACTS}` })
      .waitFor({ timeout: 60_000 });
    await sync.getByTestId('sync-status').filter({ hasText: 'SUCCESS' }).waitFor();
    expect(provider.pages.length).toBeGreaterThan(0);

    const records = page.getByRole('table', { name: 'Records of Contact' });
    await records.getByRole('row').nth(25).waitFor();
    expect(await records.getByRole('row').count()).toBe(26);
    const firstPage = await records.getByRole('row').allTextContents();
    await page.getByRole('button', { name: 'Next page' }).click();
    await page.getByText('Page 2').waitFor();
    await records
      .getByRole('row')
      .nth(CONTACTS - 25)
      .waitFor();
    const secondPage = await records.getByRole('row').allTextContents();
    expect(secondPage).toHaveLength(1 + CONTACTS - 25);
    // Every contact once over the two pages.
    const ids = [...firstPage.slice(1), ...secondPage.slice(1)].map((row) => /^c-\d+/.exec(row)?.[0]);
    expect(new Set(ids).size).toBe(CONTACTS);
    // Nothing was deleted at the provider: the deleted-only filter (server-side) finds no record.
    await page.getByLabel('Deleted only').check();
    await page.getByText('No record matches.').waitFor();
    await page.getByLabel('Deleted only').uncheck();
    await records.getByRole('row').nth(25).waitFor();

    // Pause and start the sync's schedule for this connection.
    await sync.getByRole('button', { name: 'Pause contacts' }).click();
    await sync.getByTestId('sync-status').filter({ hasText: 'PAUSED' }).waitFor();
    await sync.getByRole('button', { name: 'Start contacts' }).click();
    await sync.getByRole('button', { name: 'Pause contacts' }).waitFor();

    // Its frequency, with the keyboard alone: Tab to the field, type, Enter; the row shows the new one.
    await tabTo((el) => el.label === 'New frequency of contacts', 80);
    await page.keyboard.type('2h');
    await page.keyboard.press('Enter');
    await sync.getByRole('cell', { name: /^(2h|every 2 hours)$/ }).waitFor();

    // Metadata: a JSON object is saved and read back; anything else is refused before it is sent.
    const metadata = page.getByLabel('Metadata (JSON)');
    await metadata.fill('[1]');
    await page.getByRole('button', { name: 'Save metadata' }).click();
    await page.getByText('Metadata must be a JSON object').waitFor();
    await metadata.fill('{"plan": "enterprise"}');
    await page.getByRole('button', { name: 'Save metadata' }).click();
    await page.getByRole('status').filter({ hasText: 'Metadata saved.' }).waitFor();
    await page.reload();
    await expect(page.getByLabel('Metadata (JSON)').inputValue()).resolves.toContain('"plan": "enterprise"');

    // An admin may reveal the credentials (an audited read).
    await page.getByRole('button', { name: 'Reveal credentials' }).click();
    await page.getByTestId('credentials').filter({ hasText: API_KEY }).waitFor();
    await page.getByRole('button', { name: 'Hide credentials' }).click();
    await check('10-connection');
  });

  it('redelivers a webhook from the delivery log', async () => {
    const authHooks = () =>
      receiver.received.filter(
        (h) => h.path === '/hooks' && (JSON.parse(h.body) as { type: string }).type === 'auth',
      );
    expect(authHooks()).toHaveLength(1);
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByLabel('Type').selectOption('auth');
    const row = page.getByTestId('delivery-row').first();
    await row.getByText('delivered').waitFor();
    // With the keyboard alone: Tab to the newest delivery's Redeliver button, Enter.
    await tabTo((el) => (el.label ?? '').startsWith('Redeliver '), 80);
    expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe(
      await row.getByRole('button', { name: /^Redeliver/ }).getAttribute('aria-label'),
    );
    await page.keyboard.press('Enter');
    await page.getByRole('status').filter({ hasText: 'Redelivery queued.' }).waitFor();
    const deadline = Date.now() + 30_000;
    while (authHooks().length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    expect(authHooks()).toHaveLength(2);
    expect(authHooks()[1]!.body).toBe(authHooks()[0]!.body);
    await page.getByRole('button', { name: 'Reveal signing key' }).click();
    await check('11-webhooks');
  });

  it('adds a viewer, who sees no credentials and no control their role lacks', async () => {
    const viewerEmail = `viewer-${EMAIL}`;
    await page.getByRole('link', { name: 'Settings' }).click();
    const form = page.getByRole('form', { name: 'New console user' });
    await form.getByLabel(/^Email/).fill(viewerEmail);
    await form.getByLabel('Role').selectOption('viewer');
    await form.getByLabel(/^Initial password/).fill(PASSWORD);
    await form.getByRole('button', { name: 'Add user' }).click();
    // The new user's row, or the API's refusal (shown, so a failure here says why).
    const added = page
      .getByRole('table', { name: 'Console users' })
      .getByRole('cell', { name: viewerEmail, exact: true })
      .or(page.getByRole('alert'));
    await added.first().waitFor({ timeout: 30_000 });
    expect(await added.first().textContent()).toBe(viewerEmail);

    const viewerContext = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const viewer = await viewerContext.newPage();
      viewer.setDefaultTimeout(15_000);
      await viewer.goto(console$(`/connections/recordhub/${connectionId}`));
      await viewer.getByLabel(/^Email/).fill(viewerEmail);
      await viewer.getByLabel(/^Password/).fill(PASSWORD);
      await viewer.getByRole('button', { name: 'Sign in' }).click();
      await viewer.getByRole('heading', { name: `Connection ${connectionId}` }).waitFor();
      await viewer.getByTestId('sync-contacts').waitFor();
      await viewer.getByText('Your role cannot read credentials.').waitFor();
      expect(await viewer.getByRole('button', { name: 'Reveal credentials' }).count()).toBe(0);
      expect(await viewer.getByRole('button', { name: 'Trigger contacts' }).count()).toBe(0);
      expect(await viewer.getByRole('button', { name: 'Save metadata' }).count()).toBe(0);
      // The API answers the viewer's session without the credentials, so they are nowhere in the page.
      const answer = await viewer.evaluate(
        async (id) =>
          (
            await fetch(`/connections/${id}?provider_config_key=recordhub`, {
              headers: { 'X-Switchboard-Environment': 'dev' },
            })
          ).text(),
        connectionId,
      );
      expect(answer).toContain(connectionId);
      expect(answer).not.toContain(API_KEY);
      expect(await viewer.content()).not.toContain(API_KEY);
      await viewer.getByRole('link', { name: 'Integrations' }).click();
      await viewer.getByRole('table', { name: 'Integrations' }).getByText('recordhub').waitFor();
      expect(await viewer.getByRole('link', { name: 'New integration' }).count()).toBe(0);
      await viewer.getByRole('link', { name: 'Settings' }).click();
      await viewer.getByText('Your role has no settings to manage.').waitFor();
    } finally {
      await viewerContext.close();
    }
  });

  it('runs an action with a JSON input and shows its runs, their outcome and logs', async () => {
    // A second project, `fakehub` (its integration and connection made through the API, as a script would).
    await deployFakehub(stack, provider.url, API_KEY);
    const api = (method: string, path: string, body?: unknown) =>
      call(stack.gatewayUrl, method, path, { key: stack.secretKey, body });

    await page.getByRole('link', { name: 'Functions' }).click();
    await page.getByTestId('function-slow-echo').getByRole('button', { name: 'Open slow-echo' }).click();
    const run = page.getByRole('form', { name: 'Run slow-echo' });
    await run.getByLabel(/^Connection id/).fill('conn-fakehub');
    await run.getByLabel('Input (JSON)').fill('{"waitMs": 0}');
    await run.getByRole('button', { name: 'Run action' }).click();
    await expect(page.getByTestId('action-output').textContent()).resolves.toMatch(/"build": "first"/);
    await page.keyboard.press('Escape');

    await page.getByTestId('function-refuse').getByRole('button', { name: 'Open refuse' }).click();
    const refuse = page.getByRole('form', { name: 'Run refuse' });
    await refuse.getByLabel(/^Connection id/).fill('conn-fakehub');
    await refuse.getByLabel('Input (JSON)').fill('{"reason": "over quota"}');
    await refuse.getByRole('button', { name: 'Run action' }).click();
    // The action's own error, as the API answered it.
    await refuse.getByRole('alert').filter({ hasText: 'The action failed' }).waitFor();
    await page.keyboard.press('Escape');

    // Both runs, with their outcome.
    const runs = page.getByTestId('action-run');
    await runs.filter({ hasText: 'refuse' }).getByText('failed').waitFor();
    await runs.filter({ hasText: 'slow-echo' }).getByText('succeeded').waitFor();

    // The list is every run of the environment (GET /functions/runs), also one a program started.
    const byProgram = await call(stack.gatewayUrl, 'POST', '/action/trigger', {
      key: stack.secretKey,
      headers: { 'connection-id': 'conn-fakehub', 'provider-config-key': 'fakehub' },
      body: { action_name: 'slow-echo', input: { waitMs: 0 } },
    });
    expect(byProgram.status).toBe(200);
    const programRun = byProgram.headers.get('x-switchboard-run-id')!;
    // Its logs answer once its row is written (a synchronous action answers first).
    expect((await api('GET', `/functions/runs/${programRun}/logs`)).status).toBe(200);
    expectError(await api('GET', '/functions/runs?cursor=yesterday'), 400, 'invalid_query_params');
    expectError(await api('GET', '/functions/runs?status=lost'), 400, 'invalid_query_params');
    await page.reload();
    const rows = page.getByRole('table', { name: 'Action runs' }).getByTestId('action-run-row');
    const openLogs = rows.first().getByRole('button', { name: `Logs of run ${programRun}` });
    await openLogs.waitFor();
    expect(await rows.count()).toBe(3);
    // A row opens that run's logs.
    await openLogs.click();
    await runs
      .filter({ hasText: `run ${programRun}` })
      .getByText('succeeded')
      .waitFor();
    // Filtered on the server: the failed run only.
    await page.getByLabel('Status').selectOption('failed');
    await rows.filter({ hasText: 'slow-echo' }).first().waitFor({ state: 'detached' });
    await rows.filter({ hasText: 'refuse' }).getByText('failed').waitFor();
    expect(await rows.count()).toBe(1);
    await check('13-action-runs');
  });

  it("saves environment variables, rotates the signing key, changes a user's role (ending their sign-in), and shows it in the audit log", async () => {
    const viewerEmail = `viewer-${EMAIL}`;
    await page.getByRole('link', { name: 'Settings' }).click();
    const variables = page.getByRole('form', { name: 'Environment variables' });
    await variables.getByRole('button', { name: 'Add variable' }).click();
    await variables.getByLabel('Name').last().fill('REGION');
    await variables.getByLabel('Value').last().fill('eu-west-1');
    await variables.getByRole('button', { name: 'Save variables' }).click();
    await page.getByRole('status').filter({ hasText: 'Variables saved.' }).waitFor();
    const stored = await call(stack.gatewayUrl, 'GET', '/environment-variables', { key: stack.secretKey });
    expect(stored.body).toEqual(expect.arrayContaining([{ name: 'REGION', value: 'eu-west-1' }]));

    // The user signed in elsewhere loses their sign-in as soon as their role changes.
    const otherContext = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const other = await otherContext.newPage();
      other.setDefaultTimeout(15_000);
      await other.goto(console$('/integrations'));
      await other.getByLabel(/^Email/).fill(viewerEmail);
      await other.getByLabel(/^Password/).fill(PASSWORD);
      await other.getByRole('button', { name: 'Sign in' }).click();
      await other
        .getByTestId('signed-in-as')
        .filter({ hasText: `${viewerEmail} (viewer)` })
        .waitFor();

      const patched = page.waitForResponse(
        (r) => r.request().method() === 'PATCH' && r.url().includes('/console/api/users/'),
      );
      await page.getByLabel(`Role of ${viewerEmail}`).selectOption('developer');
      expect((await patched).status()).toBe(200);
      await other.getByRole('link', { name: 'Connections' }).click();
      await other.waitForURL(/\/console\/sign-in/);
      await other.getByLabel(/^Email/).fill(viewerEmail);
      await other.getByLabel(/^Password/).fill(PASSWORD);
      await other.getByRole('button', { name: 'Sign in' }).click();
      await other
        .getByTestId('signed-in-as')
        .filter({ hasText: `${viewerEmail} (developer)` })
        .waitFor();
    } finally {
      await otherContext.close();
    }

    await page.getByRole('link', { name: 'Audit log' }).click();
    await page.getByRole('heading', { name: 'Audit log' }).waitFor();
    const events = page.getByRole('table', { name: 'Audit events' }).getByTestId('audit-row');
    await events
      .filter({ hasText: "Changed a user's role" })
      .filter({ hasText: viewerEmail })
      .first()
      .waitFor();
    await events.filter({ hasText: 'Signed in' }).filter({ hasText: viewerEmail }).first().waitFor();
    await page.getByLabel('Event', { exact: true }).selectOption({ label: "Changed a user's role" });
    await events.filter({ hasText: 'Signed in' }).first().waitFor({ state: 'detached' });
    await check('14-audit');

    // Rotate the signing key: the new one is shown, and the old one's grace period.
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('button', { name: 'Reveal signing key' }).click();
    const key = page.getByTestId('signing-key');
    const before = (await key.textContent())!;
    expect(before).not.toContain('•');
    await page.getByRole('button', { name: 'Rotate signing key' }).click();
    await page.getByText('The previous key still signs until').waitFor();
    await waitForTextChange(page, 'signing-key', before);
    const after = (await key.textContent())!;
    const environment = await call(stack.gatewayUrl, 'GET', '/environment', { key: stack.secretKey });
    expect((environment.body as { data: { webhook_signing_key: string } }).data.webhook_signing_key).toBe(
      after,
    );
    expect(after).not.toBe(before);
    await check('15-signing-key-rotated');
  });

  it('sets the webhook public key of a provider that signs with one, refusing what the API refuses', async () => {
    const first = generateKeyPairSync('ed25519');
    const second = generateKeyPairSync('ed25519');
    const spki = (key: KeyObject) => key.export({ type: 'spki', format: 'pem' }).toString();
    await page.getByRole('link', { name: 'Integrations' }).click();
    await page.getByRole('link', { name: 'New integration' }).click();
    await pickProvider(page, 'highlevel');
    await page.getByLabel('Unique key').fill('highlevel-keys');
    await page.getByLabel(/^Client ID/).fill('ghl-client');
    await page.getByLabel(/^Client secret/).fill('ghl-secret-1');
    // A private key is refused in the form, with the API's words, and nothing is sent.
    await page
      .getByLabel(/^Webhook public key/)
      .fill(first.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
    await page.getByText('webhook_public_key is a private key').waitFor();
    await page.getByRole('button', { name: 'Create integration' }).click();
    await page.getByRole('heading', { name: 'New integration' }).waitFor();
    const path = '/integrations/highlevel-keys';
    expectError(await call(stack.gatewayUrl, 'GET', path, { key: stack.secretKey }), 404, 'not_found');

    await page.getByLabel(/^Webhook public key/).fill(spki(first.publicKey));
    await page.getByRole('button', { name: 'Create integration' }).click();
    await page.getByRole('heading', { name: 'Integration highlevel-keys' }).waitFor();
    const webhookUrl = (await page.getByTestId('webhook-url').textContent())!;
    // Stored (no answer shows it): HighLevel webhooks signed with its private key are accepted.
    const body = JSON.stringify({ type: 'ContactCreate', locationId: 'loc-console', webhookId: 'wh-1' });
    const webhook = (key: KeyObject) => postSignedWebhook(webhookUrl, body, key);
    expect(await webhook(first.privateKey)).toBe(200);
    expect(await webhook(second.privateKey)).toBe(401);
    await check('16-webhook-public-key');

    // Editing: an RSA key is the API's to refuse (HighLevel signs with Ed25519), and its message is shown.
    const edit = page.getByRole('form', { name: 'Edit integration' });
    await edit.getByLabel(/^Client ID/).fill('ghl-client');
    await edit.getByLabel(/^Client secret/).fill('ghl-secret-2');
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    await edit.getByLabel(/^Webhook public key/).fill(spki(rsa.publicKey));
    await edit.getByRole('button', { name: 'Save', exact: true }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: 'The integration was not saved' })
      .filter({ hasText: 'ed25519' })
      .waitFor();
    expect(await webhook(first.privateKey)).toBe(200);

    await edit.getByLabel(/^Webhook public key/).fill(spki(second.publicKey));
    await edit.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    // The webhook ingress keeps an integration for a few seconds: the new key applies within them.
    const until = Date.now() + 20_000;
    while ((await webhook(second.privateKey)) !== 200 && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(await webhook(second.privateKey)).toBe(200);
    expect(await webhook(first.privateKey)).toBe(401);
  });

  it('creates an API key that works, revokes it, and signs out', async () => {
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByLabel('Key name').fill('reporting');
    await page.getByLabel('environment:integrations:read', { exact: true }).check();
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = (await page.getByTestId('new-secret-key').textContent())!;
    expect((await call(stack.gatewayUrl, 'GET', '/integrations', { key: secret })).status).toBe(200);
    // Its scope is all it has: no connections, no action runs.
    expect((await call(stack.gatewayUrl, 'GET', '/connections', { key: secret })).status).toBe(403);
    expectError(await call(stack.gatewayUrl, 'GET', '/functions/runs', { key: secret }), 403, 'forbidden');
    await page.getByTestId('api-key-reporting').waitFor();
    await check('12-settings');

    await page.getByRole('button', { name: 'Revoke reporting' }).click();
    await page.getByTestId('api-key-reporting').waitFor({ state: 'detached' });
    expect((await call(stack.gatewayUrl, 'GET', '/integrations', { key: secret })).status).toBe(401);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/console\/sign-in$/);
    expect((await context.cookies()).find((c) => c.name === 'switchboard_console')).toBeUndefined();
    await page.goto(console$('/settings'));
    await page.waitForURL(/\/console\/sign-in\?next=%2Fsettings/);
  });
});
