import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { environmentCaller, FUNCTIONS_SUBJECTS } from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import { startStack, type Stack } from '@switchboard/testing';
import { connect, headers as natsHeaders, type NatsConnection } from 'nats';
import {
  startFakePagesProvider,
  writePagesProvidersFile,
  type FakePagesProvider,
} from './support/fake-pages-provider';

interface CollectedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  attributes: { key: string; value: { stringValue?: string; intValue?: string } }[];
}

/** A loopback OTLP/HTTP (JSON) collector: the services export to it as they would to a real one. */
function startCollector(): Promise<{ server: Server; url: string; spans: CollectedSpan[]; raw: string[] }> {
  const spans: CollectedSpan[] = [];
  const raw: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      raw.push(text);
      const body = JSON.parse(text) as {
        resourceSpans?: {
          resource: { attributes: { key: string; value: { stringValue?: string } }[] };
          scopeSpans: { spans: Omit<CollectedSpan, 'service'>[] }[];
        }[];
      };
      for (const rs of body.resourceSpans ?? []) {
        const service =
          rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '?';
        for (const ss of rs.scopeSpans) for (const s of ss.spans) spans.push({ ...s, service });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, raw }),
    ),
  );
}

/**
 * One run is one trace: the orchestrator's trace context travels in the NATS headers to the run's span,
 * and from there through the script's proxied call to the proxy service and the provider. No credential
 * of the connection reaches any span.
 */
describe('functions-runtime tracing', () => {
  let stack: Stack;
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let fake: FakePagesProvider;
  let nc: NatsConnection;
  const token = `secret-token-${randomBytes(8).toString('hex')}`;

  beforeAll(async () => {
    [collector, fake] = await Promise.all([startCollector(), startFakePagesProvider()]);
    stack = await startStack({
      env: {
        OTEL_TRACES_EXPORTER: 'otlp',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.url}/v1/traces`,
        OTEL_BSP_SCHEDULE_DELAY: '100',
        SWITCHBOARD_PROVIDERS_FILE: writePagesProvidersFile(),
      },
      serviceEnv: { proxy: { SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1' } },
      readyTimeoutMs: 120_000,
    });
    nc = await connect({ servers: stack.natsUrl });
    const post = (path: string, body: unknown) =>
      fetch(`${stack.gatewayUrl}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${stack.secretKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    expect(
      (
        await post('/integrations', {
          provider: 'fake-pages',
          unique_key: 'fake-pages',
          credentials: { type: 'OAUTH2', client_id: 'cid', client_secret: 'csecret' },
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await post('/connections', {
          provider_config_key: 'fake-pages',
          connection_id: 'traced',
          credentials: { type: 'OAUTH2', access_token: token },
          connection_config: { origin: fake.url },
        })
      ).status,
    ).toBeLessThan(300);
  }, 180_000);

  afterAll(async () => {
    await nc?.drain().catch(() => undefined);
    await stack?.stop();
    collector?.server.close();
    await fake?.close();
  }, 60_000);

  it('traces the run and its proxied calls under the caller’s trace, without secrets', async () => {
    const caller = await environmentCaller(new NatsRequester(nc), { uuid: stack.environmentUuid });
    const code = readFileSync(join(__dirname, 'fixtures', 'list-items.cjs'), 'utf8');
    const traceId = randomBytes(16).toString('hex');
    const hdrs = natsHeaders();
    hdrs.set('traceparent', `00-${traceId}-${randomBytes(8).toString('hex')}-01`);
    const packet = {
      pattern: FUNCTIONS_SUBJECTS.run,
      id: randomUUID(),
      data: {
        caller,
        invocationId: randomUUID(),
        function: {
          id: 'fn',
          name: 'list-items',
          type: 'action',
          version: '1',
          codeSha256: createHash('sha256').update(code).digest('hex'),
          code,
        },
        connection: { connectionId: 'traced', providerConfigKey: 'fake-pages', provider: 'fake-pages' },
        input: { style: 'cursor' },
      },
    };
    const msg = await nc.request(FUNCTIONS_SUBJECTS.run, Buffer.from(JSON.stringify(packet)), {
      timeout: 30_000,
      headers: hdrs,
    });
    const reply = JSON.parse(Buffer.from(msg.data).toString('utf8')) as {
      response: { ok: boolean; data: { status: string } };
    };
    expect(reply.response.data.status).toBe('success');

    const ours = () => collector.spans.filter((s) => s.traceId === traceId);
    const providerCalls = () =>
      ours().filter(
        (s) => s.service === 'proxy' && s.attributes.some((a) => a.value.stringValue === `${fake.url}/me`),
      );
    // Each service exports in its own batches: wait until the proxy's, the runtime's run span and its
    // four proxied-call spans are all in, not just the first of them.
    const complete = () =>
      providerCalls().length > 0 &&
      ours().some((s) => s.name === 'function.run action') &&
      ours().filter((s) => s.name === 'nango.proxy GET').length >= 4;
    const deadline = Date.now() + 15_000;
    while (!complete() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));

    const spans = ours();
    const run = spans.find((s) => s.name === 'function.run action');
    expect(run?.service).toBe('functions-runtime');
    const server = spans.find((s) => s.spanId === run?.parentSpanId);
    expect(server?.name).toBe(`${FUNCTIONS_SUBJECTS.run} process`);
    // Every script proxy call is a child of the run, and the provider call continues that trace in the proxy.
    const proxied = spans.filter((s) => s.name === 'nango.proxy GET');
    expect(proxied.length).toBe(4);
    for (const p of proxied) expect(p.parentSpanId).toBe(run?.spanId);
    expect(providerCalls().length).toBeGreaterThan(0);

    // The connection's token never appears in anything exported.
    expect(collector.raw.join('\n')).not.toContain(token);
  }, 60_000);
});
