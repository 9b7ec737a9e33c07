import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { StackOptions } from '@switchboard/testing';
import { call } from './http';

export interface Contact {
  id: string;
  name: string;
  revision: number;
}

/**
 * A contacts API on loopback for the `recordhub` fixture sync (catalog entry `fake-api-key`, base URL
 * `<origin>/v2`): `GET /v2/contacts?cursor=<offset>` answers `pageSize` contacts and the next cursor. The
 * contact list is mutable between runs, and pages can be made slow (a run to kill midway).
 */
export class ContactsProvider {
  contacts: Contact[] = [];
  pageSize = 500;
  pageDelayMs = 0;
  /** Every page request's cursor, in arrival order, with the connection and variant that asked and when it came. */
  readonly pages: { cursor: string; connection: string; variant: string; at: number }[] = [];
  private server: Server | undefined;
  private readonly holds = new Map<string, { requested: () => void; released: Promise<void> }>();

  constructor(
    private readonly apiKey: string,
    count: number,
  ) {
    for (let i = 0; i < count; i++) this.contacts.push({ id: `c-${i}`, name: `Contact ${i}`, revision: 1 });
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  /** Renames `count` contacts from the start of the list (their revision moves). */
  change(count: number, from = 0): string[] {
    return this.contacts.slice(from, from + count).map((c) => {
      c.name = `${c.name} (renamed)`;
      c.revision += 1;
      return c.id;
    });
  }

  /** Removes `count` contacts from the end of the list. */
  remove(count: number): string[] {
    return this.contacts.splice(this.contacts.length - count, count).map((c) => c.id);
  }

  add(count: number, prefix: string): string[] {
    const added = Array.from({ length: count }, (_, i) => ({
      id: `${prefix}-${i}`,
      name: `New ${i}`,
      revision: 1,
    }));
    this.contacts.push(...added);
    return added.map((c) => c.id);
  }

  /**
   * Holds the next request for the page at `cursor` until `release()` (later ones are answered as usual):
   * the run asking for it waits, and then gets the page as it was when it asked.
   */
  hold(cursor: string): { requested: Promise<void>; release: () => void } {
    let requested!: () => void;
    let release!: () => void;
    const asked = new Promise<void>((resolve) => (requested = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    this.holds.set(cursor, { requested, released });
    return { requested: asked, release };
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (req.headers['x-api-key'] !== this.apiKey) return send(401, { message: 'bad key' });
      if (url.pathname !== '/v2/contacts') return send(404, { message: 'no such route' });
      const cursor = url.searchParams.get('cursor') ?? '0';
      this.pages.push({
        cursor,
        connection: url.searchParams.get('connection') ?? '',
        variant: url.searchParams.get('variant') ?? '',
        at: Date.now(),
      });
      const start = Number(cursor);
      const items = this.contacts.slice(start, start + this.pageSize);
      const next = start + this.pageSize < this.contacts.length ? String(start + this.pageSize) : null;
      // The page as it is now, whenever it is sent.
      const page = JSON.parse(JSON.stringify({ items, next })) as unknown;
      const hold = this.holds.get(cursor);
      this.holds.delete(cursor);
      hold?.requested();
      void (hold?.released ?? Promise.resolve()).then(() =>
        setTimeout(() => send(200, page), this.pageDelayMs),
      );
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return this;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** The services a sync spec needs to reach the fakes on loopback (their egress is refused there by default). */
export function loopbackEgress(
  extra: NonNullable<StackOptions['serviceEnv']> = {},
): NonNullable<StackOptions['serviceEnv']> {
  const allow = { SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1' };
  return {
    ...extra,
    gateway: { ...allow, ...extra.gateway },
    proxy: { ...allow, ...extra.proxy },
    'functions-runtime': { ...allow, ...extra['functions-runtime'] },
    'webhook-relay': { ...allow, ...extra['webhook-relay'] },
  };
}

/**
 * The `recordhub` integration (catalog entry `fake-api-key`) with a connection to `provider` for each id, and
 * the environment's webhooks, sync errors included, sent to `hooksUrl`. Answers the webhook signing key.
 */
export async function setUpRecordhub(
  stack: { gatewayUrl: string; secretKey: string },
  provider: ContactsProvider,
  apiKey: string,
  connectionIds: string[],
  hooksUrl: string,
): Promise<string> {
  const api = (method: string, path: string, body?: unknown) =>
    call(stack.gatewayUrl, method, path, { key: stack.secretKey, ...(body !== undefined ? { body } : {}) });
  expect(
    (await api('POST', '/integrations', { provider: 'fake-api-key', unique_key: 'recordhub' })).status,
  ).toBe(200);
  for (const connectionId of connectionIds) {
    const imported = await api('POST', '/connections', {
      provider_config_key: 'recordhub',
      connection_id: connectionId,
      credentials: { type: 'API_KEY', apiKey },
      connection_config: { origin: provider.url, account: 'acme' },
    });
    expect([200, 201]).toContain(imported.status);
  }
  const settings = await api('PATCH', '/environment', {
    webhook_settings: { primary_url: hooksUrl, on_sync_error: true },
  });
  expect(settings.status).toBe(200);
  return ((await api('GET', '/environment')).body as { data: { webhook_signing_key: string } }).data
    .webhook_signing_key;
}
