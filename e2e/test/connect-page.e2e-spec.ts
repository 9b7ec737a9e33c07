import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Nango } from '@nangohq/node';
import { ALL_SERVICES, repoRoot, type Stack } from '@switchboard/testing';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from './support/chromium';
import {
  fakeOAuthCredentials,
  startConnectFakeProvider,
  startConnectStack,
  type ConnectFakeProvider,
} from './support/connect-fakes';
import { STACK_READY_TIMEOUT_MS } from './support/processes';

/**
 * The connect page in a real browser (Debian's Chromium driven by playwright-core): an end user opens
 * the connect link, picks an integration and completes its flow, with the keyboard only. A screenshot
 * of every state is kept under e2e/artifacts/connect-page/.
 */

/** Functions given to page.evaluate run in the browser; these are the few DOM shapes they touch (no DOM lib here). */
interface BrowserElement {
  getAttribute(name: string): string | null;
}
declare const window: {
  events: unknown[];
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void;
  open: (url?: string, target?: string, features?: string) => unknown;
  opener: { postMessage(message: unknown, targetOrigin: string): void };
};
declare const document: {
  activeElement: BrowserElement | null;
  querySelectorAll(selector: string): ArrayLike<{ naturalWidth: number }>;
};

const ARTIFACTS = join(repoRoot(), 'e2e', 'artifacts', 'connect-page');

describe('the connect page in Chromium', () => {
  let stack: Stack;
  let nango: Nango;
  let fake: ConnectFakeProvider;
  let browser: Browser;
  let context: BrowserContext;
  const run = Math.random().toString(36).slice(2, 8);
  const keyIntegration = `key-${run}`;
  const oauthIntegration = `oauth-${run}`;

  const shot = (page: Page, name: string) =>
    page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    fake = await startConnectFakeProvider();
    ({ stack } = await startConnectStack(fake, {
      // A validate-connection script is deployed and run here.
      services: ALL_SERVICES,
      // The customer's app lives on the fake's origin here: only it may frame the page or hear from it.
      allowedOrigins: fake.url,
      readyTimeoutMs: STACK_READY_TIMEOUT_MS,
    }));
    nango = new Nango({ secretKey: stack.secretKey, host: stack.gatewayUrl });
    await nango.createIntegration({ provider: 'fake-key', unique_key: keyIntegration });
    await nango.createIntegration({
      provider: 'fake-oauth',
      unique_key: oauthIntegration,
      credentials: fakeOAuthCredentials(fake, 'read'),
    });
    browser = await launchChromium();
    // The fake provider's certificate is a throwaway self-signed one.
    context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 900, height: 800 } });
  }, STACK_READY_TIMEOUT_MS + 60_000);

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await stack?.stop();
    await fake?.stop();
  });

  it('connects an API key with the keyboard alone, inside a popup that reports back to its opener', async () => {
    const userId = `browser-key-${run}`;
    const { data } = await nango.createConnectSession({
      end_user: { id: userId, display_name: 'Browser User' },
      allowed_integrations: [keyIntegration, oauthIntegration],
      overrides: { [keyIntegration]: { docs_connect: 'https://docs.example.com/our-api-key-guide' } },
    });

    // The customer's app opens the connect link in a popup and listens for its events.
    const host = await context.newPage();
    await host.goto(`${fake.url}/customer-app`);
    await host.evaluate(() => {
      window.events = [];
      window.addEventListener('message', (event) => window.events.push(event.data));
    });
    const [page] = await Promise.all([
      context.waitForEvent('page'),
      host.evaluate(
        (link) => void window.open(link, 'connect', 'popup,width=600,height=800'),
        data.connect_link,
      ),
    ]);

    await page.waitForSelector('h1:has-text("Connect an account")');
    const buttons = page.locator('button.integration');
    await expect(buttons.allTextContents()).resolves.toEqual([
      expect.stringContaining('Fake Key'),
      expect.stringContaining('Fake OAuth'),
    ]);
    // Logos come from the gateway and actually load.
    await page.waitForFunction(() =>
      Array.from(document.querySelectorAll('button.integration img')).every((img) => img.naturalWidth > 0),
    );
    const logos = await page
      .locator('button.integration img')
      .evaluateAll((imgs) => imgs.map((img) => (img as unknown as { src: string }).src));
    expect(logos).toEqual([
      `${stack.gatewayUrl}/images/template-logos/fake-key.svg`,
      `${stack.gatewayUrl}/images/template-logos/fake-oauth.svg`,
    ]);
    await shot(page, '01-integrations');

    // Tab to the API-key integration and open it with Enter.
    for (let i = 0; i < 10; i++) {
      if (
        (await page.evaluate(() => document.activeElement?.getAttribute('data-integration'))) ===
        keyIntegration
      )
        break;
      await page.keyboard.press('Tab');
    }
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-integration'))).toBe(
      keyIntegration,
    );
    await page.keyboard.press('Enter');
    await page.waitForSelector('h1:has-text("Connect Fake Key")');
    expect(await page.getByRole('link', { name: /How to connect Fake Key/ }).getAttribute('href')).toBe(
      'https://docs.example.com/our-api-key-guide',
    );
    // The key field has a real label and already has the focus.
    const keyField = page.getByLabel('API key');
    await expect(keyField.evaluate((el) => (el as unknown) === document.activeElement)).resolves.toBe(true);
    expect(await keyField.getAttribute('type')).toBe('password');
    await shot(page, '02-api-key-form');

    // Submitting empty says what is missing, without a server round trip.
    await page.keyboard.press('Enter');
    await page.waitForSelector('.field-error:has-text("API key is required")');

    await page.keyboard.type('definitely-wrong-key');
    await page.keyboard.press('Enter');
    const alert = page.locator('#form-error');
    await alert.filter({ hasText: 'refused the credentials' }).waitFor();
    await shot(page, '03-api-key-refused');
    expect(await nango.listConnections({ userId })).toEqual({ connections: [] });
    // Focus is back on the key, selected, so typing replaces it.
    await expect(keyField.evaluate((el) => (el as unknown) === document.activeElement)).resolves.toBe(true);
    expect(await keyField.getAttribute('aria-invalid')).toBe('true');

    await page.keyboard.type(fake.goodApiKey);
    await page.keyboard.press('Enter');
    await page.waitForSelector('h1:has-text("Fake Key is connected")');
    await shot(page, '04-api-key-connected');

    const { connections } = await nango.listConnections({ userId });
    expect(connections).toEqual([expect.objectContaining({ provider_config_key: keyIntegration })]);
    const connection = await nango.getConnection(keyIntegration, connections[0]!.connection_id);
    expect(connection.credentials).toEqual({ type: 'API_KEY', apiKey: fake.goodApiKey });

    // The opener heard the Connect UI "connect" event, with the new connection.
    const events = (await host.evaluate(() => window.events)) as { type: string; payload?: unknown }[];
    expect(events).toContainEqual({
      type: 'connect',
      payload: { providerConfigKey: keyIntegration, connectionId: connections[0]!.connection_id },
    });
    await page.close();
    await host.close();
  });

  it("shows a validate-connection script's refusal on the page, and stores nothing", async () => {
    const guarded = `guarded-${run}`;
    const userId = `browser-guarded-${run}`;
    await nango.createIntegration({ provider: 'fake-key', unique_key: guarded });
    // A deployed on-event script in the shape the nango CLI compiles: it sees the candidate key.
    const script = `"use strict";
module.exports = { default: { type: "onEvent", event: "validate-connection", description: "No sandbox keys",
  exec: async (nango) => {
    const { apiKey } = await nango.getToken();
    if (apiKey === ${JSON.stringify(fake.goodApiKey)})
      throw new nango.ActionError({ message: "This is a sandbox key: connect your workspace with a live key" });
  } } };`;
    const deployed = await fetch(`${stack.gatewayUrl}/sync/deploy`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.secretKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        flowConfigs: [],
        onEventScriptsByProvider: [
          {
            providerConfigKey: guarded,
            scripts: [
              { name: 'no-sandbox-keys', event: 'validate-connection', fileBody: { js: script, ts: '' } },
            ],
          },
        ],
        deployMode: 'integration',
        reconcile: false,
      }),
    });
    expect(deployed.status).toBe(200);

    const { data } = await nango.createConnectSession({
      end_user: { id: userId },
      allowed_integrations: [guarded],
    });
    const page = await context.newPage();
    await page.goto(data.connect_link);
    await page.waitForSelector('h1:has-text("Connect Fake Key")');
    await page.keyboard.type(fake.goodApiKey);
    await page.keyboard.press('Enter');
    await page
      .locator('#form-error')
      .filter({ hasText: 'This is a sandbox key: connect your workspace with a live key' })
      .waitFor({ timeout: 20_000 });
    await shot(page, '03b-api-key-refused-by-validate-connection');
    expect(await nango.listConnections({ userId })).toEqual({ connections: [] });
    await page.close();
  });

  it('completes OAuth 2 through the provider in a popup, asking for the tenant first', async () => {
    const userId = `browser-oauth-${run}`;
    const { data } = await nango.createConnectSession({
      end_user: { id: userId },
      allowed_integrations: [oauthIntegration],
    });
    const page = await context.newPage();
    await page.goto(data.connect_link);
    // One allowed integration: the page opens it directly.
    await page.waitForSelector('h1:has-text("Connect Fake OAuth")');
    const tenant = page.getByLabel(/Tenant/);
    await expect(tenant.evaluate((el) => (el as unknown) === document.activeElement)).resolves.toBe(true);
    await shot(page, '05-oauth-form');
    await page.keyboard.type('acme');
    const [popup] = await Promise.all([page.waitForEvent('popup'), page.keyboard.press('Enter')]);
    await page.waitForSelector('h1:has-text("Fake OAuth is connected")', { timeout: 20_000 });
    await shot(page, '06-oauth-connected');
    await popup.waitForEvent('close', { timeout: 5_000 }).catch(() => undefined);
    expect(popup.isClosed()).toBe(true);

    expect(fake.authorizeRequests.at(-1)?.get('code_challenge_method')).toBe('S256');
    const { connections } = await nango.listConnections({ userId });
    expect(connections).toHaveLength(1);
    const connection = await nango.getConnection(oauthIntegration, connections[0]!.connection_id);
    expect(connection.credentials).toMatchObject({ type: 'OAUTH2', access_token: fake.accessTokens.at(-1) });
    expect(connection.connection_config).toMatchObject({ tenant: 'acme' });
    await page.close();
  });

  it('falls back to a full-page redirect when popups are blocked, and comes back to show the result', async () => {
    const userId = `browser-redirect-${run}`;
    const { data } = await nango.createConnectSession({
      end_user: { id: userId },
      allowed_integrations: [oauthIntegration],
    });
    const page = await context.newPage();
    await page.addInitScript(() => {
      window.open = () => null;
    });
    await page.goto(data.connect_link);
    await page.waitForSelector('h1:has-text("Connect Fake OAuth")');
    await page.keyboard.type('acme');
    await page.keyboard.press('Enter');
    // Provider → callback page → back to the connect page, which shows the outcome.
    await page.waitForURL(/oauth_result=success/, { timeout: 20_000 });
    await page.waitForSelector('h1:has-text("Fake OAuth is connected")');
    expect(page.url()).not.toContain('session_token=');
    await shot(page, '07-oauth-full-page-connected');
    const { connections } = await nango.listConnections({ userId });
    expect(connections).toHaveLength(1);
    await page.close();
  });

  it('explains an expired link instead of showing an empty page', async () => {
    const page = await context.newPage();
    const { data } = await nango.createConnectSession({ end_user: { id: `deleted-${run}` } });
    await fetch(`${stack.gatewayUrl}/connect/session`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${data.token}` },
    });
    await page.goto(data.connect_link);
    await page.waitForSelector('h1:has-text("This link has expired")');
    await expect(page.getByRole('alert').textContent()).resolves.toContain('Ask for a new link');
    await shot(page, '08-expired-link');
    await page.close();
  });

  it('tells only an allowed origin what happened: another opener hears nothing', async () => {
    const { data } = await nango.createConnectSession({ end_user: { id: `origins-${run}` } });
    await fetch(`${stack.gatewayUrl}/connect/session`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${data.token}` },
    });
    const heard = async (hostUrl: string) => {
      const host = await context.newPage();
      await host.goto(hostUrl);
      await host.evaluate(() => {
        window.events = [];
        window.addEventListener('message', (event) => window.events.push(event.data));
      });
      const [popup] = await Promise.all([
        context.waitForEvent('page'),
        host.evaluate((link) => void window.open(link, '_blank', 'popup'), data.connect_link),
      ]);
      await popup.waitForSelector('h1:has-text("This link has expired")');
      // The page posts its message in the same task that shows the heading. A marker posted after it to any
      // origin arrives after it (messages from one window arrive in order): once the host has the marker,
      // the page's message, if the host was allowed to hear it, has arrived too.
      await popup.evaluate(() => window.opener.postMessage({ type: 'barrier' }, '*'));
      await host.waitForFunction(() =>
        window.events.some((e) => (e as { type?: string }).type === 'barrier'),
      );
      const events = (await host.evaluate(() => window.events)) as { type: string }[];
      await popup.close();
      await host.close();
      return events.map((e) => e.type).filter((type) => type !== 'barrier');
    };
    expect(await heard(`${fake.url}/customer-app`)).toEqual(['error']);
    expect(await heard(`${stack.gatewayUrl}/health`)).toEqual([]);
  });
});
