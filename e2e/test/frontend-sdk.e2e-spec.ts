import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { Nango } from '@nangohq/node';
import { repoRoot, type Stack } from '@switchboard/testing';
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
 * The official browser SDK, `@nangohq/frontend` 0.71.10, unchanged, on a customer's page (an allowed
 * origin on loopback) in Debian's Chromium: `nango.auth()` over the gateway's WebSocket, with the popup
 * going through a fake OAuth provider, and `openConnectUI()` over the connect page. Screenshots under
 * e2e/artifacts/frontend-sdk/.
 */

/** The few browser shapes the functions given to page.evaluate touch (no DOM lib here). */
interface SdkError {
  type?: string;
  message?: string;
}
interface NangoInstance {
  auth(key: string, options?: unknown): Promise<{ providerConfigKey: string; connectionId: string }>;
  openConnectUI(options: unknown): unknown;
}
declare const window: {
  sdkLoaded?: boolean;
  events: { type: string }[];
  Nango: new (config: Record<string, unknown>) => NangoInstance;
};
declare const document: {
  getElementById(id: string): unknown;
  createElement(tag: 'canvas'): {
    width: number;
    height: number;
    getContext(kind: '2d'): {
      drawImage(image: unknown, x: number, y: number): void;
      getImageData(x: number, y: number, w: number, h: number): { data: ArrayLike<number> };
    };
  };
};
declare const Image: new () => { src: string; decode(): Promise<void> };

const ARTIFACTS = join(repoRoot(), 'e2e', 'artifacts', 'frontend-sdk');
const SDK_DIST = join(dirname(require.resolve('@nangohq/frontend/package.json')), 'dist');

/** The customer's app: a page that loads the SDK's own ES modules from its origin, and the SDK files. */
async function startCustomerApp(): Promise<{ url: string; stop(): Promise<void> }> {
  const page = `<!doctype html>
<html><head><meta charset="utf-8"><title>Customer dashboard</title>
<style>body{margin:0;font:16px system-ui}#brand{height:220px;background:#d01010;color:#fff;padding:24px;font-size:32px}</style>
</head><body>
<div id="brand">Customer dashboard</div>
<p>Connected accounts appear here.</p>
<script type="module">
import Nango from '/sdk/index.js';
window.Nango = Nango;
window.events = [];
window.sdkLoaded = true;
</script>
</body></html>`;
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    const file = /^\/sdk\/([a-zA-Z]+\.js)$/.exec(path)?.[1];
    if (file && existsSync(join(SDK_DIST, file))) {
      res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' });
      return res.end(readFileSync(join(SDK_DIST, file)));
    }
    if (path === '/app') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      return res.end(page);
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

type AuthOutcome =
  | { ok: true; result: { providerConfigKey: string; connectionId: string; isPending?: boolean } }
  | { ok: false; type: string | undefined; message: string | undefined };

describe('@nangohq/frontend 0.71.10 in Chromium', () => {
  let stack: Stack;
  let nango: Nango;
  let fake: ConnectFakeProvider;
  let customer: { url: string; stop(): Promise<void> };
  let connectUrl: string;
  let browser: Browser;
  let context: BrowserContext;
  const run = Math.random().toString(36).slice(2, 8);
  const oauthIntegration = `sdk-oauth-${run}`;

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    fake = await startConnectFakeProvider();
    customer = await startCustomerApp();
    ({ stack, connectUrl } = await startConnectStack(fake, {
      allowedOrigins: customer.url,
      readyTimeoutMs: STACK_READY_TIMEOUT_MS,
    }));
    nango = new Nango({ secretKey: stack.secretKey, host: stack.gatewayUrl });
    await nango.createIntegration({
      provider: 'fake-oauth',
      unique_key: oauthIntegration,
      credentials: fakeOAuthCredentials(fake, 'read'),
    });
    browser = await launchChromium();
    context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1000, height: 760 } });
  }, STACK_READY_TIMEOUT_MS + 60_000);

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await stack?.stop();
    await fake?.stop();
    await customer?.stop();
  });

  const customerPage = async (): Promise<Page> => {
    const page = await context.newPage();
    await page.goto(`${customer.url}/app`);
    await page.waitForFunction(() => window.sdkLoaded === true);
    return page;
  };

  const sessionToken = async (userId: string, allowed?: string[]) => {
    const { data } = await nango.createConnectSession({
      end_user: { id: userId },
      ...(allowed ? { allowed_integrations: allowed } : {}),
    });
    return data.token;
  };

  /** Runs `nango.auth()` on the customer's page; the outcome of its promise, as data. */
  const auth = (
    page: Page,
    config: Record<string, unknown>,
    key: string,
    options: Record<string, unknown>,
  ): Promise<AuthOutcome> =>
    page.evaluate(
      async ({ config, key, options }) => {
        const sdk = new window.Nango(config);
        try {
          return { ok: true as const, result: await sdk.auth(key, options) };
        } catch (error) {
          const e = error as SdkError;
          return { ok: false as const, type: e.type, message: e.message };
        }
      },
      { config, key, options },
    );

  it('nango.auth() resolves with the new connection, learnt over the WebSocket', async () => {
    const userId = `sdk-auth-${run}`;
    const page = await customerPage();
    const token = await sessionToken(userId);
    const outcome = await auth(
      page,
      { host: stack.gatewayUrl, connectSessionToken: token },
      oauthIntegration,
      { params: { tenant: 'acme' } },
    );
    expect(outcome).toEqual({
      ok: true,
      result: { providerConfigKey: oauthIntegration, connectionId: expect.any(String), isPending: false },
    });
    const { connectionId } = (outcome as Extract<AuthOutcome, { ok: true }>).result;
    const connection = await nango.getConnection(oauthIntegration, connectionId);
    expect(connection.credentials).toMatchObject({ type: 'OAUTH2', access_token: fake.accessTokens.at(-1) });
    expect(connection.end_user).toMatchObject({ id: userId });
    await page.close();
  });

  it('resolves when the socket is held by another gateway process than the one handling the callback', async () => {
    const second = await stack.startReplica('gateway');
    const secondUrl = `http://127.0.0.1:${second.port}`;
    const userId = `sdk-replica-${run}`;
    const page = await customerPage();
    const token = await sessionToken(userId);
    // The popup's start and the provider's callback go to the first gateway (SWITCHBOARD_SERVER_URL); the
    // SDK's socket to the second one (an absolute websocketsPath), as a load balancer may split them.
    const outcome = await auth(
      page,
      { host: stack.gatewayUrl, websocketsPath: `${secondUrl}/`, connectSessionToken: token },
      oauthIntegration,
      { params: { tenant: 'acme' } },
    );
    expect(outcome).toMatchObject({ ok: true, result: { providerConfigKey: oauthIntegration } });
    const { connectionId } = (outcome as Extract<AuthOutcome, { ok: true }>).result;
    const { connections } = await nango.listConnections({ userId });
    expect(connections.map((c) => c.connection_id)).toEqual([connectionId]);
    await page.close();
    // Starting a gateway process takes a while on a busy machine.
  }, 150_000);

  it('rejects an unknown integration with unknown_config_key', async () => {
    const page = await customerPage();
    const token = await sessionToken(`sdk-unknown-${run}`);
    const outcome = await auth(
      page,
      { host: stack.gatewayUrl, connectSessionToken: token },
      `missing-${run}`,
      {},
    );
    expect(outcome).toMatchObject({ ok: false, type: 'unknown_config_key' });
    await page.close();
  });

  it('rejects with window_closed when the end user closes the popup at the provider (detectClosedAuthWindow)', async () => {
    // The provider shows a consent screen and waits, instead of approving at once.
    const page = await customerPage();
    const token = await sessionToken(`sdk-closed-${run}`);
    const popupAtProvider = page.waitForEvent('popup').then(async (popup) => {
      await popup.waitForSelector('h1:has-text("Allow Customer")', { timeout: 20_000 });
      expect(popup.url()).toContain(`${fake.url}/consent-screen/authorize`);
      await popup.close();
    });
    const [outcome] = await Promise.all([
      auth(page, { host: stack.gatewayUrl, connectSessionToken: token }, oauthIntegration, {
        params: { tenant: 'consent-screen' },
        detectClosedAuthWindow: true,
      }),
      popupAtProvider,
    ]);
    expect(outcome).toMatchObject({ ok: false, type: 'window_closed' });
    await page.close();
  });

  it("refuses a WebSocket from an origin that is not allowed, and another session's use of a socket id", async () => {
    // A page on an origin the operator did not list cannot open the socket at all.
    const stranger = await context.newPage();
    await stranger.goto(`${stack.gatewayUrl}/health`);
    const strangerSocket = await stranger.evaluate(
      (url) =>
        new Promise<string>((resolve) => {
          const ws = new (globalThis as unknown as { WebSocket: new (u: string) => WsLike }).WebSocket(url);
          ws.onmessage = () => resolve('message');
          ws.onerror = () => resolve('refused');
        }),
      stack.gatewayUrl.replace('http://', 'ws://') + '/',
    );
    expect(strangerSocket).toBe('refused');
    await stranger.close();

    // The victim's socket (its id leaked, say through a log) is claimed by the victim's flow first; an
    // attacker's own flow started with that id is refused and its outcome never reaches the victim.
    const page = await customerPage();
    const wsClientId = await page.evaluate(
      (url) =>
        new Promise<string>((resolve) => {
          const ws = new (globalThis as unknown as { WebSocket: new (u: string) => WsLike }).WebSocket(url);
          (globalThis as unknown as { victimFrames: string[] }).victimFrames = [];
          ws.onmessage = (event) => {
            const frame = JSON.parse(event.data) as { message_type: string; ws_client_id?: string };
            (globalThis as unknown as { victimFrames: string[] }).victimFrames.push(frame.message_type);
            if (frame.message_type === 'connection_ack') resolve(frame.ws_client_id!);
          };
        }),
      stack.gatewayUrl.replace('http://', 'ws://') + '/',
    );
    const victimToken = await sessionToken(`sdk-victim-${run}`);
    const start = (token: string) =>
      fetch(
        `${stack.gatewayUrl}/oauth/connect/${oauthIntegration}?connect_session_token=${token}&ws_client_id=${wsClientId}&params[tenant]=acme`,
        { redirect: 'manual' },
      );
    expect((await start(victimToken)).status).toBe(302);
    const attackerToken = await sessionToken(`sdk-attacker-${run}`);
    const refused = await start(attackerToken);
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain('ws_client_id');
    // An id nobody holds is refused too.
    const unknown = await fetch(
      `${stack.gatewayUrl}/oauth/connect/${oauthIntegration}?connect_session_token=${attackerToken}&ws_client_id=${crypto.randomUUID()}&params[tenant]=acme`,
      { redirect: 'manual' },
    );
    expect(unknown.status).toBe(400);
    expect(
      await page.evaluate(() => (globalThis as unknown as { victimFrames: string[] }).victimFrames),
    ).toEqual(['connection_ack']);
    await page.close();
  });

  describe('openConnectUI', () => {
    const open = async (name: string) => {
      const page = await customerPage();
      const token = await sessionToken(`sdk-ui-${name}-${run}`, [oauthIntegration]);
      await page.evaluate(
        ({ token, baseURL, apiURL }) => {
          const sdk = new window.Nango({ connectSessionToken: token });
          sdk.openConnectUI({
            baseURL,
            apiURL,
            onEvent: (event: { type: string }) => void window.events.push(event),
          });
        },
        { token, baseURL: connectUrl, apiURL: stack.gatewayUrl },
      );
      const frame = page.frameLocator('#connect-ui');
      await frame.locator('h1:has-text("Connect Fake OAuth")').waitFor({ timeout: 20_000 });
      return { page, frame };
    };

    const closedBy = async (page: Page) => {
      await page.waitForFunction(() => window.events.some((e) => e.type === 'close'));
      // The SDK removed its frame: the customer's page is usable again.
      expect(await page.evaluate(() => document.getElementById('connect-ui') === null)).toBe(true);
    };

    /** The colour of one pixel of a PNG, read by the browser itself. */
    const pixel = async (png: Buffer, x: number, y: number): Promise<number[]> => {
      const reader = await context.newPage();
      const rgba = await reader.evaluate(
        async ({ b64, x, y }) => {
          const img = new Image();
          img.src = `data:image/png;base64,${b64}`;
          await img.decode();
          const canvas = document.createElement('canvas');
          canvas.width = x + 1;
          canvas.height = y + 1;
          const ctx = canvas.getContext('2d');
          ctx.drawImage(img, 0, 0);
          return Array.from(ctx.getImageData(x, y, 1, 1).data);
        },
        { b64: png.toString('base64'), x, y },
      );
      await reader.close();
      return rgba;
    };

    it('shows the customer page dimmed under the overlay, and its close button fires the close event', async () => {
      const { page, frame } = await open('button');
      const png = await page.screenshot({ path: join(ARTIFACTS, '01-connect-ui-over-customer-page.png') });
      // Top-left is the customer's red banner, outside the card: it shows through, darker.
      const [r = 0, g = 0, b = 0] = await pixel(png, 20, 20);
      expect(r).toBeGreaterThan(50);
      expect(r).toBeLessThan(0xd0);
      expect(r - Math.max(g, b)).toBeGreaterThan(40);
      await frame.locator('button.close-x').click();
      await closedBy(page);
      await page.close();
    });

    it('closes on Escape', async () => {
      const { page, frame } = await open('escape');
      await frame.locator('h1').press('Escape');
      await closedBy(page);
      await page.close();
    });

    it('closes on a click outside the card', async () => {
      const { page } = await open('outside');
      await page.mouse.click(15, 700);
      await closedBy(page);
      await page.screenshot({ path: join(ARTIFACTS, '02-customer-page-after-close.png') });
      await page.close();
    });
  });
});

interface WsLike {
  onmessage: ((event: { data: string }) => void) | null;
  onerror: (() => void) | null;
}
