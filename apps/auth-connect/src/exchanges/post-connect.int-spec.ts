import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ResolvedProvider } from '@switchboard/providers';
import { ProviderExchangeError } from './exchange.errors';
import { runPostConnect } from './post-connect';
import { closeProviderEgress, configureProviderEgress } from './provider-egress';

/**
 * Post-connect calls made with a typed credential: a provider on loopback that names the account only to
 * the credential placed where the proxy places it, and quotes back anything else it is sent.
 */
describe('runPostConnect with a typed credential', () => {
  let server: Server;
  let url = '';
  const seen: { path: string; query: URLSearchParams; headers: IncomingMessage['headers'] }[] = [];

  beforeAll(async () => {
    configureProviderEgress('127.0.0.1');
    server = createServer((req, res) => {
      const parsed = new URL(req.url ?? '/', url);
      seen.push({ path: parsed.pathname, query: parsed.searchParams, headers: req.headers });
      const basic = `Basic ${Buffer.from('ada:pw-lovelace').toString('base64')}`;
      const known =
        (req.headers['x-api-key'] === 'key-acme' && parsed.searchParams.get('token') === 'key-acme') ||
        req.headers.authorization === basic;
      res.writeHead(known ? 200 : 401, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify(
          known
            ? { account: { id: 'acct-42' } }
            : { message: `key ${String(req.headers['x-api-key'])} means nothing to us` },
        ),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await closeProviderEgress();
  });

  const provider = (auth_mode: 'API_KEY' | 'BASIC', proxy: Record<string, unknown>) =>
    ({
      name: 'acme',
      display_name: 'Acme',
      auth_mode,
      proxy: { base_url: url, ...proxy },
      post_connect: [
        { method: 'GET', url: `${url}/v1/account`, connection_config: { accountId: 'account.id' } },
      ],
    }) as unknown as ResolvedProvider;
  const keyProvider = () =>
    provider('API_KEY', { headers: { 'x-api-key': '${apiKey}' }, query: { token: '${apiKey}' } });

  it('sends an API key in the headers and query the proxy would, and keeps the account it names', async () => {
    const filled = await runPostConnect({
      provider: keyProvider(),
      auth: { typed: { type: 'API_KEY', apiKey: 'key-acme' } },
      connectionConfig: {},
    });
    expect(filled).toEqual({ accountId: 'acct-42' });
    const call = seen.at(-1)!;
    expect(call.path).toBe('/v1/account');
    // Where the proxy puts this provider's key, and nowhere else: no Bearer header it never documents.
    expect(call.headers.authorization).toBeUndefined();
  });

  it('sends a basic pair as the Basic header the proxy sends when no template places it', async () => {
    const filled = await runPostConnect({
      provider: provider('BASIC', {}),
      auth: { typed: { type: 'BASIC', username: 'ada', password: 'pw-lovelace' } },
      connectionConfig: {},
    });
    expect(filled).toEqual({ accountId: 'acct-42' });
  });

  it('fails with our own sentence when the provider refuses, never its words nor the key', async () => {
    const error = await runPostConnect({
      provider: keyProvider(),
      auth: { typed: { type: 'API_KEY', apiKey: 'key-unknown-123' } },
      connectionConfig: {},
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ProviderExchangeError);
    expect(error).toMatchObject({
      code: 'invalid_credentials',
      message: 'acme post-connect call failed: the provider answered HTTP 401',
    });
  });
});
