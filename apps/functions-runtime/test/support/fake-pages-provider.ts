import { writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Items 1..5, served two by two in three styles of pagination. */
export const ITEM_IDS = [1, 2, 3, 4, 5];
const PAGE = 2;

export interface FakePagesProvider {
  url: string;
  /** Every request the fake saw: method, path with query, headers. */
  seen: { method: string; url: string; headers: IncomingHttpHeaders }[];
  close(): Promise<void>;
}

/** A provider API on loopback with cursor, link-header and offset paginated lists of items. */
export async function startFakePagesProvider(): Promise<FakePagesProvider> {
  const seen: FakePagesProvider['seen'] = [];
  let origin = '';
  const server: Server = createServer((req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    const url = new URL(req.url ?? '/', origin);
    const limit = Number(url.searchParams.get('limit') ?? PAGE);
    const json = (body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(200, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    const slice = (from: number) => ITEM_IDS.slice(from, from + limit).map((id) => ({ id }));
    switch (url.pathname) {
      case '/me':
        return json({ id: 'me' });
      case '/cursor/items': {
        const from = Number(url.searchParams.get('after') ?? 0);
        const next = from + limit < ITEM_IDS.length ? String(from + limit) : null;
        return json({ items: slice(from), next });
      }
      case '/link/items': {
        const page = Number(url.searchParams.get('page') ?? 0);
        const from = page * limit;
        const more = from + limit < ITEM_IDS.length;
        return json(
          { items: slice(from) },
          more ? { link: `<${origin}/link/items?limit=${limit}&page=${page + 1}>; rel="next"` } : {},
        );
      }
      case '/offset/items':
        return json({ items: slice(Number(url.searchParams.get('offset') ?? 0)) });
      default:
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ message: 'not found' }));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: origin,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * A provider catalog with `fake-pages` (OAuth2, base URL from the connection config) whose catalog
 * entry names cursor pagination as its default, as `proxy.paginate` does for real providers.
 */
export function writePagesProvidersFile(): string {
  const providers = {
    'fake-pages': {
      display_name: 'Fake paginated API',
      categories: ['dev-tools'],
      docs: 'https://example.com/docs',
      auth_mode: 'OAUTH2',
      authorization_url: '${connectionConfig.origin}/oauth/authorize',
      token_url: '${connectionConfig.origin}/oauth/token',
      proxy: {
        base_url: '${connectionConfig.origin}',
        paginate: {
          type: 'cursor',
          cursor_path_in_response: 'next',
          cursor_name_in_request: 'after',
          response_path: 'items',
        },
      },
      connection_config: {
        origin: { type: 'string', title: 'Origin', pattern: '^http://127\\.0\\.0\\.1:[0-9]+$' },
      },
    },
    // Credentials of other shapes (a script's getToken answers the whole credentials object for them).
    'fake-keys': {
      display_name: 'Fake API-key API',
      categories: ['dev-tools'],
      docs: 'https://example.com/docs',
      auth_mode: 'API_KEY',
    },
    'fake-basic': {
      display_name: 'Fake basic-auth API',
      categories: ['dev-tools'],
      docs: 'https://example.com/docs',
      auth_mode: 'BASIC',
    },
  };
  const file = join(tmpdir(), `switchboard-functions-providers-${process.pid}-${Date.now()}.json`);
  writeFileSync(file, JSON.stringify(providers, null, 2));
  return file;
}
