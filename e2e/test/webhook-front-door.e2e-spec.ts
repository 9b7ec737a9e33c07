import { createHmac, randomUUID } from 'node:crypto';
import type { Stack } from '@switchboard/testing';
import { call } from './support/http';
import { START_HOOK_TIMEOUT_MS } from './support/processes';
import { comparable, raw, type RawResponse } from './support/proxy-fakes';
import { linearIntegration } from './support/webhook-events';
import { standardStack } from './support/standard-stack';

/**
 * The gateway's webhook front door serves a plain provider webhook (a `Content-Length` body, room in the
 * rate-limit slices) without Fastify and hands every other one to Fastify's webhook route. The provider
 * must get the same answer either way: each webhook below is sent once with a `Content-Length` (the direct
 * lane, once the first webhook of the window has leased the slices) and once chunked (always Fastify), and
 * the two answers are compared, headers included (only the date and connection headers may differ).
 */

const VOLATILE = new Set(['date', 'keep-alive', 'connection']);
const SECRET = `lin-${randomUUID()}`;

describe('provider webhook front door: the direct lane and the Fastify lane answer alike', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await standardStack();
    const integration = await call(stack.gatewayUrl, 'POST', '/integrations', {
      key: stack.secretKey,
      body: linearIntegration(SECRET),
    });
    expect(integration.status).toBe(200);
  }, START_HOOK_TIMEOUT_MS);

  afterAll(async () => {
    await stack?.stop();
  });

  /** The same webhook (fresh delivery ids) down both lanes. */
  async function bothLanes(
    path: string,
    body: string,
    sign: (text: string) => string,
  ): Promise<[RawResponse, RawResponse]> {
    const send = (chunked: boolean) =>
      raw(
        stack.gatewayUrl,
        'POST',
        path,
        {
          'content-type': 'application/json',
          'linear-signature': sign(body),
          'linear-delivery': randomUUID(),
          ...(chunked ? { 'transfer-encoding': 'chunked' } : {}),
        },
        Buffer.from(body),
      );
    return [await send(false), await send(true)];
  }

  const signed = (text: string) => createHmac('sha256', SECRET).update(text).digest('hex');
  const event = () =>
    JSON.stringify({
      type: 'Issue',
      action: 'create',
      organizationId: 'org-x',
      webhookTimestamp: Date.now(),
      data: { id: randomUUID() },
    });

  it('stores a signed webhook and answers 200 on both lanes', async () => {
    // The window's first webhook leases the slices (Fastify's lane); the ones below may take the direct one.
    await bothLanes(`/webhook/${stack.environmentUuid}/linear`, event(), signed);
    const [direct, framework] = await bothLanes(`/webhook/${stack.environmentUuid}/linear`, event(), signed);
    expect(direct.status).toBe(200);
    expect(JSON.parse(direct.body.toString())).toEqual({ status: 'success' });
    expect(comparable(direct, VOLATILE)).toEqual(comparable(framework, VOLATILE));
  });

  it('refuses a bad signature with the same 401 on both lanes', async () => {
    const [direct, framework] = await bothLanes(`/webhook/${stack.environmentUuid}/linear?x=1`, event(), () =>
      'f'.repeat(64),
    );
    expect(direct.status).toBe(401);
    expect(comparable(direct, VOLATILE)).toEqual(comparable(framework, VOLATILE));
  });

  it('answers unknown environments and integrations with the same 404s on both lanes', async () => {
    for (const path of [`/webhook/${randomUUID()}/linear`, `/webhook/${stack.environmentUuid}/nope`]) {
      const [direct, framework] = await bothLanes(path, event(), signed);
      expect(direct.status).toBe(404);
      expect(comparable(direct, VOLATILE)).toEqual(comparable(framework, VOLATILE));
    }
  });
});
