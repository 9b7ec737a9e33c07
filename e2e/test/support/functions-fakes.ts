import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ItemsProvider {
  url: string;
  /** Every request: path with query and headers, in arrival order. */
  seen: { url: string; headers: IncomingHttpHeaders }[];
  /**
   * From now on `/v2/account` is held unanswered (a provider that hangs), until `release()` answers the
   * held requests and lets later ones through.
   */
  holdAccount(): { readonly held: number; release(): void };
  close(): Promise<void>;
}

export const ITEM_NAMES = ['alpha', 'beta', 'gamma', 'delta', 'epsilon'];

/**
 * A provider API on loopback for the fixture's `fakehub` scripts, behind the `fake-api-key` catalog
 * entry (base URL `<origin>/v2`, key in `x-api-key`): `/v2/account`, `/v2/items` paged by cursor, and `POST /v2/farewell`.
 */
export async function startItemsProvider(apiKey: string): Promise<ItemsProvider> {
  const seen: ItemsProvider['seen'] = [];
  let holding: ServerResponse[] | undefined;
  const account = (res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ login: 'acme' }));
  };
  const server: Server = createServer((req, res) => {
    seen.push({ url: req.url ?? '', headers: req.headers });
    const url = new URL(req.url ?? '/', 'http://localhost');
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.headers['x-api-key'] !== apiKey) return send(401, { message: 'bad key' });
    if (url.pathname === '/v2/account') {
      if (holding) holding.push(res);
      else account(res);
      return;
    }
    if (url.pathname === '/v2/farewell' && req.method === 'POST') return send(200, { ok: true });
    if (url.pathname === '/v2/items') {
      const limit = Number(url.searchParams.get('limit') ?? '2');
      const start = Number(url.searchParams.get('cursor') ?? '0');
      const items = ITEM_NAMES.slice(start, start + limit).map((name, i) => ({ id: start + i, name }));
      const next = start + limit < ITEM_NAMES.length ? String(start + limit) : null;
      return send(200, { items, next });
    }
    send(404, { message: 'no such route' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    holdAccount() {
      const held: ServerResponse[] = (holding = []);
      return {
        get held() {
          return held.length;
        },
        release() {
          holding = undefined;
          // A caller that went away meanwhile gets nothing (its socket is gone).
          for (const res of held) if (!res.destroyed) account(res);
        },
      };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
