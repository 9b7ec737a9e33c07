import { createHmac } from 'node:crypto';
import { Nango } from '@nangohq/node';
import { Webhook } from 'standardwebhooks';
import { generateSigningKey, serializeBody, signDelivery } from './webhook-signer';

describe('signDelivery', () => {
  it('produces the Standard Webhooks specification vector', () => {
    const headers = signDelivery(
      '{"test": 2432232314}',
      'msg_p5jXN8AQM9LWM0D4loKWxJek',
      { current: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' },
      new Date(1614265330 * 1000),
    );
    expect(headers['webhook-id']).toBe('msg_p5jXN8AQM9LWM0D4loKWxJek');
    expect(headers['webhook-timestamp']).toBe('1614265330');
    expect(headers['webhook-signature']).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  it('is accepted by the unmodified @nangohq/node verifyIncomingWebhookRequest, and only with the right key', () => {
    const key = generateSigningKey();
    const body = serializeBody({ type: 'auth', from: 'nango', connectionId: 'c-1', success: true });
    const headers = signDelivery(body, 'msg_1', { current: key });
    // A receiver sees the headers as Node lower-cases them, and the body as the raw text.
    expect(
      new Nango({ secretKey: 'unused', webhookSigningKey: key }).verifyIncomingWebhookRequest(body, {
        ...headers,
      }),
    ).toBe(true);
    expect(
      new Nango({
        secretKey: 'unused',
        webhookSigningKey: generateSigningKey(),
      }).verifyIncomingWebhookRequest(body, { ...headers }),
    ).toBe(false);
    expect(
      new Nango({ secretKey: 'unused', webhookSigningKey: key }).verifyIncomingWebhookRequest(`${body} `, {
        ...headers,
      }),
    ).toBe(false);
  });

  it("satisfies the client's deprecated X-Nango-Signature check on the parsed body", () => {
    const key = generateSigningKey();
    const body = serializeBody({ z: 1, a: { y: [1, { b: 2, a: 1 }], x: 'é' } });
    const headers = signDelivery(body, 'msg_2', { current: key });
    const nango = new Nango({ secretKey: 'unused', webhookSigningKey: key });
    const spy = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    try {
      expect(nango.verifyWebhookSignature(headers['x-nango-signature'], JSON.parse(body))).toBe(true);
    } finally {
      spy.mockRestore();
    }
  });

  it('signs X-Nango-Hmac-Sha256 as the hex HMAC of the exact body with the key string', () => {
    const key = generateSigningKey();
    const headers = signDelivery('{"a":1}', 'msg_3', { current: key });
    expect(headers['x-nango-hmac-sha256']).toBe(createHmac('sha256', key).update('{"a":1}').digest('hex'));
  });

  it('carries one Standard Webhooks signature per key during a rotation, each verifiable on its own', () => {
    const previous = generateSigningKey();
    const current = generateSigningKey();
    const body = serializeBody({ hello: 'world' });
    const headers = signDelivery(body, 'msg_4', { current, previous });
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    for (const key of [previous, current]) {
      expect(() => new Webhook(key).verify(body, { ...headers })).not.toThrow();
    }
    expect(() => new Webhook(generateSigningKey()).verify(body, { ...headers })).toThrow();
    expect(() => new Webhook(current).verify(`${body}x`, { ...headers })).toThrow();
  });
});

describe('serializeBody', () => {
  it('is compact JSON with keys sorted at every depth', () => {
    expect(serializeBody({ b: 1, a: { d: [2, { z: 0, y: null }], c: 'x' } })).toBe(
      '{"a":{"c":"x","d":[2,{"y":null,"z":0}]},"b":1}',
    );
  });

  it('keeps what JSON.stringify of the parse gives back, so re-serialising reproduces the signed text', () => {
    const body = serializeBody({
      from: 'github',
      payload: { ref: 'refs/heads/main', commits: [{ id: 'abc', added: [] }] },
      type: 'forward',
    });
    expect(JSON.stringify(JSON.parse(body))).toBe(body);
  });
});
