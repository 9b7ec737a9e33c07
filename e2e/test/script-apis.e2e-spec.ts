import { createHash, createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Nango } from '@nangohq/node';
import type { Stack } from '@switchboard/testing';
import { zipSync } from 'fflate';
import { call, failure } from './support/http';
import { nangoDeploy, prepareProject } from './support/nango-cli';
import { START_HOOK_TIMEOUT_MS, waitFor } from './support/processes';
import { standardStack } from './support/standard-stack';

jest.setTimeout(180_000);

const KEY = 'scripthub';
const CONNECTION = 'conn-scripthub';
const TOKEN = 'scripthub-access-token';
const CLIENT_SECRET = 'scripthub-client-secret';

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A document/literal SOAP 1.1 service with one operation, its answers numbers, booleans and a list. */
const quoteWsdl = (address: string) => `<?xml version="1.0" encoding="UTF-8"?>
<wsdl:definitions xmlns:wsdl="http://schemas.xmlsoap.org/wsdl/" xmlns:soap="http://schemas.xmlsoap.org/wsdl/soap/"
    xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:tns="urn:scripthub:quotes" targetNamespace="urn:scripthub:quotes">
  <wsdl:types>
    <xsd:schema targetNamespace="urn:scripthub:quotes" elementFormDefault="qualified">
      <xsd:element name="GetQuote"><xsd:complexType><xsd:sequence>
        <xsd:element name="Symbol" type="xsd:string"/>
        <xsd:element name="Ref" type="xsd:string"/>
      </xsd:sequence></xsd:complexType></xsd:element>
      <xsd:element name="GetQuoteResponse"><xsd:complexType><xsd:sequence>
        <xsd:element name="Price" type="xsd:decimal"/>
        <xsd:element name="Open" type="xsd:boolean"/>
        <xsd:element name="Tag" type="xsd:string" maxOccurs="unbounded"/>
        <xsd:element name="Ref" type="xsd:string"/>
      </xsd:sequence></xsd:complexType></xsd:element>
    </xsd:schema>
  </wsdl:types>
  <wsdl:message name="GetQuoteIn"><wsdl:part name="parameters" element="tns:GetQuote"/></wsdl:message>
  <wsdl:message name="GetQuoteOut"><wsdl:part name="parameters" element="tns:GetQuoteResponse"/></wsdl:message>
  <wsdl:portType name="QuotePort">
    <wsdl:operation name="GetQuote"><wsdl:input message="tns:GetQuoteIn"/><wsdl:output message="tns:GetQuoteOut"/></wsdl:operation>
  </wsdl:portType>
  <wsdl:binding name="QuoteBinding" type="tns:QuotePort">
    <soap:binding style="document" transport="http://schemas.xmlsoap.org/soap/http"/>
    <wsdl:operation name="GetQuote">
      <soap:operation soapAction="urn:scripthub:quotes/GetQuote"/>
      <wsdl:input><soap:body use="literal"/></wsdl:input><wsdl:output><soap:body use="literal"/></wsdl:output>
    </wsdl:operation>
  </wsdl:binding>
  <wsdl:service name="QuoteService">
    <wsdl:port name="QuotePort" binding="tns:QuoteBinding"><soap:address location="${address}"/></wsdl:port>
  </wsdl:service>
</wsdl:definitions>`;
const QUOTE_ANSWER = `<?xml version="1.0"?>
<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body>
  <q:GetQuoteResponse xmlns:q="urn:scripthub:quotes"><q:Price>12.5</q:Price><q:Open>true</q:Open>
    <q:Tag>tech</q:Tag><q:Ref q:type="Ticker">ACME</q:Ref></q:GetQuoteResponse>
</s:Body></s:Envelope>`;
const QUOTE_FAULT = `<?xml version="1.0"?>
<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><s:Fault>
  <faultcode>s:Client</faultcode><faultstring>Unknown symbol</faultstring>
</s:Fault></s:Body></s:Envelope>`;

/**
 * One loopback server for everything the scripts reach: the provider API behind the connection
 * (`/items`, bearer token), and the "outside" URLs a script fetches on its own (`/echo`, `/archive.zip`,
 * `/redirect`), which must never see the connection's token.
 */
async function startFakes() {
  const seen: Seen[] = [];
  let port = 0;
  const zip = zipSync({
    'report.csv': new TextEncoder().encode('id,name\n1,Ada\n'),
    'notes/readme.txt': new TextEncoder().encode('zipped '.repeat(50)),
  });
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const json = (status: number, value: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      if (url.pathname === '/items') {
        if (req.headers.authorization !== `Bearer ${TOKEN}`) return json(401, { message: 'bad token' });
        return json(200, {
          items: ['alpha', 'beta', 'gamma', 'delta', 'epsilon'].map((name, id) => ({ id, name })),
        });
      }
      if (url.pathname === '/echo') {
        return json(201, {
          method: req.method,
          body: JSON.parse(body || 'null'),
          header: req.headers['x-from-script'],
        });
      }
      if (url.pathname === '/redirect') {
        res.writeHead(307, { location: '/echo' });
        return res.end();
      }
      if (url.pathname === '/soap/quote.wsdl') {
        res.writeHead(200, { 'content-type': 'text/xml' });
        return res.end(quoteWsdl(`http://127.0.0.1:${port}/soap/quote`));
      }
      if (url.pathname === '/soap/quote' && req.method === 'POST') {
        const symbol = /<Symbol>([^<]*)<\/Symbol>/.exec(body)?.[1];
        res.writeHead(symbol === 'ACME' ? 200 : 500, { 'content-type': 'text/xml; charset=utf-8' });
        return res.end(symbol === 'ACME' ? QUOTE_ANSWER : QUOTE_FAULT);
      }
      // Microsoft Teams' Bot Connector: a bot posts an activity to a conversation.
      const teams = /^\/v3\/conversations\/([^/]+)\/activities$/.exec(url.pathname);
      if (teams && req.method === 'POST') {
        if (req.headers.authorization !== `Bearer ${TOKEN}`) return json(401, { message: 'bad token' });
        return json(201, { id: `activity-${decodeURIComponent(teams[1]!)}` });
      }
      if (url.pathname === '/archive.zip') {
        res.writeHead(200, { 'content-type': 'application/zip' });
        return res.end(Buffer.from(zip));
      }
      json(404, { message: 'no such route' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The modules a script's project has installed for the CLI to load its bundles (it evaluates them). */
function installModules(project: string, modules: Record<string, string>) {
  const cli = realpathSync(join(project, 'node_modules', 'nango'));
  for (const [name, stub] of Object.entries(modules)) {
    if (stub === 'cli') {
      // unzipper is a dependency of the CLI itself.
      symlinkSync(realpathSync(join(dirname(cli), name)), join(project, 'node_modules', name));
    } else {
      mkdirSync(join(project, 'node_modules', name));
      writeFileSync(
        join(project, 'node_modules', name, 'package.json'),
        JSON.stringify({ name, main: 'index.js' }),
      );
      writeFileSync(join(project, 'node_modules', name, 'index.js'), stub);
    }
  }
}

describe('script APIs: crypto, unzipper, soap, botbuilder, uncontrolledFetch, listRecords, getIntegration, attributes', () => {
  let stack: Stack;
  let fakes: Awaited<ReturnType<typeof startFakes>>;
  let nango: Nango;
  let project: string;
  let refusedProject: string;

  const api = (method: string, path: string, body?: unknown) =>
    call(stack.gatewayUrl, method, path, { key: stack.secretKey, ...(body !== undefined ? { body } : {}) });

  beforeAll(async () => {
    fakes = await startFakes();
    stack = await standardStack();
    nango = new Nango({ secretKey: stack.secretKey, host: stack.gatewayUrl });
    const created = await api('POST', '/integrations', {
      provider: 'fake-oauth2',
      unique_key: KEY,
      credentials: { type: 'OAUTH2', client_id: 'scripthub-client', client_secret: CLIENT_SECRET },
    });
    expect(created.status).toBe(200);
    const imported = await api('POST', '/connections', {
      provider_config_key: KEY,
      connection_id: CONNECTION,
      credentials: { type: 'OAUTH2', access_token: TOKEN },
      connection_config: { origin: fakes.url },
    });
    expect([200, 201]).toContain(imported.status);
    project = prepareProject('script-apis-project');
    // The CLI loads each bundle when it deploys: a stand-in soap module (the runtime brings its own).
    installModules(project, {
      unzipper: 'cli',
      soap: 'exports.createClientAsync = async () => ({});\nexports.WSSecurity = class {};\n',
      botbuilder: 'exports.CardFactory = {};\nexports.MessageFactory = {};\nexports.ActionTypes = {};\n',
    });
    refusedProject = prepareProject('script-apis-refused-project');
  }, START_HOOK_TIMEOUT_MS);

  afterAll(async () => {
    await stack?.stop();
    await fakes?.close();
    for (const dir of [project, refusedProject]) if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('deploys scripts that require crypto, unzipper, soap and botbuilder with the nango CLI', async () => {
    const run = await nangoDeploy(project, stack.gatewayUrl, stack.secretKey);
    expect({ code: run.code, stdout: run.stdout }).toEqual({
      code: 0,
      stdout: expect.stringContaining('Successfully deployed the functions'),
    });
  });

  it("computes hashes, HMACs and random values with require('crypto') exactly as Node does", async () => {
    const input = { text: 'héllo wörld', key: 'webhook-secret' };
    const out = (await nango.triggerAction(KEY, CONNECTION, 'digest', input)) as Record<string, unknown>;
    expect(out).toEqual({
      md5: createHash('md5').update(input.text).digest('hex'),
      sha1: createHash('sha1').update(input.text).digest('base64'),
      sha256: createHash('sha256').update(input.text).digest('hex'),
      sha512: createHash('sha512').update(input.text).digest('base64'),
      hmac: createHmac('sha256', input.key).update(input.text).digest('hex'),
      chained: createHash('sha256').update(input.text).digest('hex'),
      uuid: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      webUuid: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      random: expect.stringMatching(/^[0-9a-f]{32}$/),
      same: true,
    });
    const again = (await nango.triggerAction(KEY, CONNECTION, 'digest', input)) as Record<string, unknown>;
    expect(again.uuid).not.toBe(out.uuid);
    expect(again.random).not.toBe(out.random);
  });

  it('sends nango.uncontrolledFetch to a URL of the script without the connection token, redirects included', async () => {
    const before = fakes.seen.length;
    const out = await nango.triggerAction(KEY, CONNECTION, 'fetch-outside', { url: `${fakes.url}/redirect` });
    expect(out).toEqual({
      status: 201,
      contentType: 'application/json',
      echoed: { method: 'POST', body: { hello: 'outside' }, header: 'yes' },
    });
    const requests = fakes.seen.slice(before);
    expect(requests.map((r) => `${r.method} ${r.url}`)).toEqual(['POST /redirect', 'POST /echo']);
    for (const r of requests) expect(JSON.stringify(r.headers)).not.toContain(TOKEN);
  });

  it('refuses nango.uncontrolledFetch outside the egress policy (localhost by name, other schemes)', async () => {
    const before = fakes.seen.length;
    for (const url of [`http://localhost:${fakes.port}/echo`, 'file:///etc/passwd']) {
      const refused = await failure(nango.triggerAction(KEY, CONNECTION, 'fetch-outside', { url }));
      expect(refused.status).toBeGreaterThanOrEqual(400);
      expect(JSON.stringify(refused.data)).toMatch(/egress|not allowed/);
    }
    expect(fakes.seen.length).toBe(before);
  });

  it("reads a downloaded zip with require('unzipper')", async () => {
    const out = await nango.triggerAction(KEY, CONNECTION, 'read-archive', {
      url: `${fakes.url}/archive.zip`,
    });
    expect(out).toEqual({
      files: [
        { path: 'report.csv', type: 'File', text: 'id,name\n1,Ada\n' },
        { path: 'notes/readme.txt', type: 'File', text: 'zipped '.repeat(50) },
      ],
    });
  });

  it("calls a SOAP service with require('soap'): WSDL, WS-Security, typed answer, and a fault as the error", async () => {
    const before = fakes.seen.length;
    const wsdl = `${fakes.url}/soap/quote.wsdl`;
    const out = await nango.triggerAction(KEY, CONNECTION, 'soap-quote', { wsdl, symbol: 'ACME' });
    expect(out).toEqual({
      price: 12.5,
      open: true,
      tags: ['tech'],
      refType: 'Ticker',
      ref: 'ACME',
      rawResponseHasEnvelope: true,
    });
    const [fetched, posted, ...rest] = fakes.seen.slice(before);
    expect(rest).toEqual([]);
    expect(`${fetched?.method} ${fetched?.url}`).toBe('GET /soap/quote.wsdl');
    expect(posted).toMatchObject({
      method: 'POST',
      url: '/soap/quote',
      headers: expect.objectContaining({
        soapaction: '"urn:scripthub:quotes/GetQuote"',
        'content-type': 'text/xml; charset=utf-8',
      }),
    });
    expect(posted?.body).toContain('<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"');
    expect(posted?.body).toContain('<wsse:Username>soap-user</wsse:Username>');
    expect(posted?.body).toContain('<tns:Trace>scripthub</tns:Trace>');
    expect(posted?.body).toContain(
      '<GetQuote xmlns="urn:scripthub:quotes"><Symbol>ACME</Symbol><Ref tns:type="Ticker">ACME</Ref></GetQuote>',
    );
    expect(posted?.body).toContain('xmlns:tns="urn:scripthub:quotes"');
    expect(JSON.stringify(posted?.headers)).not.toContain(TOKEN);

    // The service answers a SOAP Fault: the script's call throws it, and the run fails with its text.
    const faulted = await failure(
      nango.triggerAction(KEY, CONNECTION, 'soap-quote', { wsdl, symbol: 'NOPE' }),
    );
    expect(faulted.status).toBeGreaterThanOrEqual(400);
    expect(JSON.stringify(faulted.data)).toContain('s:Client: Unknown symbol');
  });

  it("keeps require('soap') inside the egress policy: a WSDL at localhost by name is refused", async () => {
    const before = fakes.seen.length;
    const refused = await failure(
      nango.triggerAction(KEY, CONNECTION, 'soap-quote', {
        wsdl: `http://localhost:${fakes.port}/soap/quote.wsdl`,
        symbol: 'ACME',
      }),
    );
    expect(refused.status).toBeGreaterThanOrEqual(400);
    expect(JSON.stringify(refused.data)).toMatch(/egress|not allowed/);
    expect(fakes.seen.length).toBe(before);
  });

  it('gives nango.getIntegration its own integration, the client secret only with include credentials', async () => {
    const out = (await nango.triggerAction(KEY, CONNECTION, 'integration-info', {})) as {
      plain: Record<string, unknown>;
      withCredentials: Record<string, unknown>;
      attributes: unknown;
    };
    expect(out.plain).toMatchObject({ unique_key: KEY, provider: 'fake-oauth2' });
    expect(JSON.stringify(out.plain)).not.toContain(CLIENT_SECRET);
    expect(out.withCredentials).toMatchObject({
      unique_key: KEY,
      credentials: expect.objectContaining({ client_id: 'scripthub-client', client_secret: CLIENT_SECRET }),
    });
    // The CLI deploys no attributes.
    expect(out.attributes).toBeNull();
  });

  it('stores the attributes of a deploy and gives them to nango.getFlowAttributes', async () => {
    const bundle = readFileSync(join(project, 'build', 'scripthub_actions_integration-info.cjs'), 'utf8');
    const deployed = await api('POST', '/sync/deploy', {
      flowConfigs: [
        {
          syncName: 'integration-info',
          providerConfigKey: KEY,
          type: 'action',
          models: [],
          runs: null,
          attributes: { region: 'eu', batch: 25 },
          fileBody: { js: bundle, ts: '// integration-info' },
        },
      ],
      deployMode: 'single',
      reconcile: true,
    });
    expect(deployed.status).toBe(200);
    const out = (await nango.triggerAction(KEY, CONNECTION, 'integration-info', {})) as {
      attributes: unknown;
    };
    expect(out.attributes).toEqual({ region: 'eu', batch: 25 });
  });

  it('lets one run at a time hold a lock of the connection (tryAcquireLock, releaseLock), released when a run ends', async () => {
    const guarded = (input: { key: string; holdMs: number; release: boolean }) =>
      nango.triggerAction(KEY, CONNECTION, 'guarded', input) as Promise<{
        acquired: boolean;
        again: boolean;
        released: boolean;
      }>;
    // Two runs at once: one takes the lock, the other finds it held.
    const both = await Promise.all([
      guarded({ key: 'export', holdMs: 3000, release: true }),
      guarded({ key: 'export', holdMs: 3000, release: true }),
    ]);
    expect(both.map((r) => r.acquired).sort()).toEqual([false, true]);
    expect(both.find((r) => r.acquired)).toEqual({ acquired: true, again: false, released: true });
    // Released: the next run takes it.
    expect(await guarded({ key: 'export', holdMs: 0, release: false })).toMatchObject({ acquired: true });
    // That run did not release it (TTL 60 s), but it ended: its locks were released with it.
    await waitFor('the lock to be free again', async () =>
      (await guarded({ key: 'export', holdMs: 0, release: true })).acquired ? true : undefined,
    );
  });

  it("lets a sync read its own records with nango.listRecords (the SDK's generator and Nango's pages)", async () => {
    await nango.startSync(KEY, ['tallied-items'], CONNECTION);
    const tally = await waitFor(
      'the tally record of the first run',
      async () => {
        const page = (await nango.listRecords({
          providerConfigKey: KEY,
          connectionId: CONNECTION,
          model: 'ScripthubTally',
        })) as unknown as { records: Record<string, unknown>[] };
        if (page.records[0]) return page.records[0];
        // Why not yet, in the timeout's message: the sync's status.
        throw new Error(JSON.stringify((await nango.syncStatus(KEY, ['tallied-items'], CONNECTION)).syncs));
      },
      120_000,
      300,
    );
    // 5 records in pages of 2: three pages.
    expect(tally).toMatchObject({
      id: 'tally',
      count: 5,
      pages: 3,
      names: ['alpha', 'beta', 'delta', 'epsilon', 'gamma'],
    });
  });

  it("builds Teams cards with require('botbuilder') and posts them with nango.proxy", async () => {
    const before = fakes.seen.length;
    const input = {
      conversationId: '19:general',
      title: 'Deploy finished',
      link: 'https://ci.example/run/7',
    };
    const out = await nango.triggerAction(KEY, CONNECTION, 'teams-card', input);
    expect(out).toEqual({
      id: 'activity-19:general',
      type: 'message',
      adapterError: expect.stringContaining(
        "botbuilder's BotFrameworkAdapter is not available in Switchboard functions",
      ),
    });
    const posted = fakes.seen.slice(before).filter((s) => s.url.startsWith('/v3/conversations/'));
    expect(posted).toHaveLength(1);
    expect(posted[0]).toMatchObject({ method: 'POST', url: '/v3/conversations/19%3Ageneral/activities' });
    expect(posted[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    // The activity as botbuilder 4.23.3 builds it (MessageFactory.list, CardFactory.adaptiveCard/heroCard).
    expect(JSON.parse(posted[0]!.body)).toEqual({
      type: 'message',
      attachmentLayout: 'list',
      attachments: [
        {
          contentType: 'application/vnd.microsoft.card.adaptive',
          content: {
            type: 'AdaptiveCard',
            $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
            version: '1.4',
            body: [{ type: 'TextBlock', text: 'Deploy finished', weight: 'Bolder' }],
            actions: [{ type: 'Action.OpenUrl', title: 'Open', url: input.link }],
          },
        },
        {
          contentType: 'application/vnd.microsoft.card.hero',
          content: {
            title: 'Deploy finished',
            text: 'Opened from Switchboard',
            images: [{ url: 'https://img.example/card.png' }],
            buttons: [
              { type: 'imBack', value: 'Acknowledge', title: 'Acknowledge' },
              { type: 'openUrl', title: 'Open', value: input.link },
            ],
          },
        },
      ],
      inputHint: 'acceptingInput',
      text: 'New: Deploy finished',
    });
  });

  it('refuses at deploy a bundle requiring a module the runtime does not provide, naming it', async () => {
    // The nango CLI checks imports only: a require of child_process reaches the deploy, which refuses it.
    const run = await nangoDeploy(refusedProject, stack.gatewayUrl, stack.secretKey);
    expect(run.stdout).not.toContain('Successfully deployed the functions');
    expect(`${run.stdout}\n${run.stderr}`).toContain('requires module "child_process"');

    // Any other module, through the raw endpoint.
    const refused = await api('POST', '/sync/deploy', {
      flowConfigs: [
        {
          syncName: 'reads-files',
          providerConfigKey: KEY,
          type: 'action',
          models: [],
          runs: null,
          fileBody: {
            js: 'const fs = require("fs");\nmodule.exports = { default: { exec: async () => fs } };',
            ts: '',
          },
        },
      ],
      deployMode: 'single',
      reconcile: true,
    });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({
      error: expect.objectContaining({
        code: 'invalid_body',
        message: expect.stringContaining('requires module "fs"'),
      }),
    });
    // Nothing was stored.
    const listed = await nango.listFunctions({ uniqueKey: KEY });
    expect(listed.data.map((f) => f.name)).not.toContain('reads-files');
    expect(listed.data.map((f) => f.name)).not.toContain('run-command');
  });
});
