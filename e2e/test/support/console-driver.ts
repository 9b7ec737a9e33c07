import { execFile } from 'node:child_process';
import { sign, type KeyObject } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot, startStack, type Stack } from '@switchboard/testing';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { call } from './http';
import { nangoDeploy, prepareProject } from './nango-cli';
import { STACK_READY_TIMEOUT_MS } from './processes';
import { writeProxyProvidersFile } from './proxy-fakes';
import { loopbackEgress } from './syncs-fakes';

/**
 * The page driver of the console suite: the stack it runs against, the first admin, the browser page it
 * watches for errors, the axe-core check and screenshot of each page, and keyboard-only navigation.
 */

/** Functions given to page.evaluate run in the browser; the few browser globals they touch. */
interface AxeResult {
  violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[];
}
declare const axe: { run(context: unknown, options: unknown): Promise<AxeResult> };
export interface BrowserDocument {
  activeElement: {
    getAttribute(name: string): string | null;
    textContent: string | null;
    tagName: string;
  } | null;
}
declare const document: BrowserDocument;

export const ARTIFACTS = join(repoRoot(), 'e2e', 'artifacts', 'console');
const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

/** `switchboard console users create`, as an operator creates the first admin. */
export function createConsoleUser(
  stack: Stack,
  email: string,
  role: string,
  password: string,
): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [
        join(repoRoot(), 'packages/cli/dist/main.js'),
        'console',
        'users',
        'create',
        '--email',
        email,
        '--role',
        role,
        '--account',
        stack.accountName,
      ],
      {
        env: {
          PATH: process.env.PATH,
          DATABASE_URL: stack.databaseUrl,
          SWITCHBOARD_CONSOLE_PASSWORD: password,
        },
      },
      (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout)),
    );
  });
}

/** The console's stack: the proxy providers, the connect page on `connectPort`, no verified-key cache. */
export function startConsoleStack(connectPort: number, connectUrl: string): Promise<Stack> {
  mkdirSync(ARTIFACTS, { recursive: true });
  return startStack({
    env: {
      SWITCHBOARD_PROVIDERS_FILE: writeProxyProvidersFile(),
      SWITCHBOARD_CONNECT_URL: connectUrl,
    },
    serviceEnv: loopbackEgress({
      'auth-connect': { CONNECT_PORT: String(connectPort), CONNECT_HOST: '127.0.0.1' },
      // A revoked key is refused at once (no verified-key cache).
      gateway: { SWITCHBOARD_KEY_CACHE_TTL_MS: '0' },
    }),
    readyTimeoutMs: 2 * STACK_READY_TIMEOUT_MS,
  });
}

/** A page of a new context that reports what the browser logs as an error into `browserErrors`. */
export async function openConsolePage(
  browser: Browser,
  browserErrors: string[],
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  page.on('console', (message) => {
    // An API error answer (which the page shows) is logged by Chromium too: expected, not a fault.
    const apiError = /^Failed to load resource: the server responded with a status of \d{3}/;
    if (message.type() === 'error' && !apiError.test(message.text())) browserErrors.push(message.text());
  });
  page.on('pageerror', (error) => browserErrors.push(error.message));
  page.on('dialog', (dialog) => void dialog.accept());
  return { context, page };
}

/** axe-core on the page as it is now: no serious or critical violation; then a screenshot. */
export async function checkPage(page: Page, name: string): Promise<void> {
  // Evaluated over the DevTools protocol, so the page's CSP (no inline script) does not apply to it.
  await page.evaluate(AXE_SOURCE);
  const result = await page.evaluate(() =>
    axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } }),
  );
  const serious = result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      targets: v.nodes.map((n) => n.target).slice(0, 5),
    }));
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
  expect({ page: name, serious }).toEqual({ page: name, serious: [] });
}

export interface FocusedElement {
  label: string | null;
  text: string;
  tag: string;
  placeholder: string | null;
}

/** Presses Tab until the focused element matches, as a keyboard user would (at most `max` presses). */
export async function tabTo(page: Page, matches: (el: FocusedElement) => boolean, max = 40): Promise<void> {
  for (let i = 0; i < max; i++) {
    const el = await page.evaluate(() => ({
      label: document.activeElement?.getAttribute('aria-label') ?? null,
      text: (document.activeElement?.textContent ?? '').trim(),
      tag: document.activeElement?.tagName ?? '',
      placeholder: document.activeElement?.getAttribute('placeholder') ?? null,
    }));
    if (matches(el)) return;
    await page.keyboard.press('Tab');
  }
  throw new Error('the element was never focused with Tab');
}

/** The customer opens a connect link in a page of its own and connects the API key account. */
export async function connectAsCustomer(
  context: BrowserContext,
  link: string,
  origin: string,
  apiKey: string,
): Promise<void> {
  const customer = await context.newPage();
  await customer.goto(link);
  await customer.getByLabel(/Origin/).fill(origin);
  await customer.getByLabel(/Account/).fill('acme');
  await customer.getByLabel(/API key/).fill(apiKey);
  await customer.getByRole('button', { name: 'Connect', exact: true }).click();
  await customer.waitForSelector('h1:has-text("is connected")');
  await customer.close();
}

/** Types `name` into the new integration form's provider search and picks that provider. */
export async function pickProvider(page: Page, name: string): Promise<void> {
  await page
    .getByLabel(/^Provider/)
    .first()
    .fill(name);
  await page.getByRole('option', { name: new RegExp(`\\(${name}\\)$`) }).click();
}

/** Waits until the element with `testId` no longer shows `old`. */
export async function waitForTextChange(page: Page, testId: string, old: string): Promise<void> {
  await page.waitForFunction(
    ([id, previous]) =>
      (
        globalThis as unknown as { document: { querySelector(s: string): { textContent: string } | null } }
      ).document.querySelector(`[data-testid="${id}"]`)?.textContent !== previous,
    [testId, old] as const,
  );
}

/** The status a HighLevel-style webhook of `body` gets when signed (Ed25519) with `key`. */
export async function postSignedWebhook(webhookUrl: string, body: string, key: KeyObject): Promise<number> {
  const res = await fetch(webhookUrl, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-ghl-signature': sign(null, Buffer.from(body), key).toString('base64'),
    },
    body,
  });
  return res.status;
}

/**
 * A second project, `fakehub`, as a script would make it: its integration and API key connection through
 * the API, then the functions project deployed with the `nango` CLI.
 */
export async function deployFakehub(stack: Stack, origin: string, apiKey: string): Promise<void> {
  const api = (method: string, path: string, body?: unknown) =>
    call(stack.gatewayUrl, method, path, { key: stack.secretKey, body });
  expect(
    (await api('POST', '/integrations', { provider: 'fake-api-key', unique_key: 'fakehub' })).status,
  ).toBe(200);
  const imported = await api('POST', '/connections', {
    provider_config_key: 'fakehub',
    connection_id: 'conn-fakehub',
    credentials: { type: 'API_KEY', apiKey },
    connection_config: { origin, account: 'acme' },
  });
  expect([200, 201]).toContain(imported.status);
  const actions = prepareProject('functions-project');
  try {
    const deploy = await nangoDeploy(actions, stack.gatewayUrl, stack.secretKey);
    expect(deploy.stdout).toContain('Successfully deployed the functions');
  } finally {
    rmSync(actions, { recursive: true, force: true });
  }
}
