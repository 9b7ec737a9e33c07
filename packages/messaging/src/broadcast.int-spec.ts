import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { testInfrastructure } from '@switchboard/testing';
import { connect, type NatsConnection, type Subscription } from 'nats';
import { z } from 'zod';
import { listenBroadcast } from './broadcast';

const prefix = `test.${randomUUID().slice(0, 8)}`;
const schema = z.object({ environmentId: z.number().int(), providerConfigKey: z.string() });
type Change = z.infer<typeof schema>;

/** Resolves with the first `count` messages a listener was handed, or rejects after `ms`. */
function nextOf(received: Change[], count: number, ms = 2_000): Promise<Change[]> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const poll = () => {
      if (received.length >= count) resolve(received.slice(0, count));
      else if (Date.now() - started > ms)
        reject(new Error(`${received.length} of ${count} messages arrived`));
      else setTimeout(poll, 10);
    };
    poll();
  });
}

describe('listenBroadcast: schema-checked announcements every replica sees', () => {
  let natsServers: string;
  let listener: NatsConnection;
  let publisher: NatsConnection;
  const subscriptions: Subscription[] = [];
  let warn: jest.SpyInstance;
  let error: jest.SpyInstance;

  beforeAll(async () => {
    const { natsUrl } = await testInfrastructure();
    natsServers = natsUrl;
    listener = await connect({ servers: natsUrl });
    publisher = await connect({ servers: natsUrl });
  });

  beforeEach(() => {
    warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    error = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
  });

  afterEach(() => {
    for (const subscription of subscriptions.splice(0)) subscription.unsubscribe();
    jest.restoreAllMocks();
  });

  afterAll(async () => {
    await publisher?.close();
    await listener?.close();
  });

  async function listen(subject: string, onMessage: (change: Change) => void | Promise<void>) {
    subscriptions.push(listenBroadcast(listener, subject, schema, onMessage));
    await listener.flush();
  }

  it('hands a valid message to the handler, parsed', async () => {
    const subject = `${prefix}.valid`;
    const received: Change[] = [];
    await listen(subject, (change) => {
      received.push(change);
    });
    publisher.publish(subject, JSON.stringify({ environmentId: 7, providerConfigKey: 'github' }));
    expect(await nextOf(received, 1)).toEqual([{ environmentId: 7, providerConfigKey: 'github' }]);
  });

  it('lets the listeners a broadcast request concerns answer it, the others staying silent', async () => {
    const subject = `${prefix}.request`;
    const other = await connect({ servers: natsServers });
    try {
      // Two replicas hear every request; only the one holding environment 7 answers.
      subscriptions.push(
        listenBroadcast(listener, subject, schema, (change, respond) => {
          if (change.environmentId === 7) respond({ holder: 'first' });
        }),
        listenBroadcast(other, subject, schema, () => undefined),
      );
      await Promise.all([listener.flush(), other.flush()]);
      const answer = await publisher.request(
        subject,
        JSON.stringify({ environmentId: 7, providerConfigKey: 'github' }),
        { timeout: 2_000 },
      );
      expect(answer.json()).toEqual({ holder: 'first' });
      // Nobody holds environment 8: no answer comes, the request times out.
      await expect(
        publisher.request(subject, JSON.stringify({ environmentId: 8, providerConfigKey: 'github' }), {
          timeout: 300,
        }),
      ).rejects.toMatchObject({ code: 'TIMEOUT' });
    } finally {
      await other.close();
    }
  });

  it('drops a message that is not JSON or fails the schema with one warning that omits the payload', async () => {
    const subject = `${prefix}.malformed`;
    const received: Change[] = [];
    await listen(subject, (change) => {
      received.push(change);
    });
    publisher.publish(subject, 'secret-token-123 {');
    publisher.publish(subject, JSON.stringify({ environmentId: 'secret-token-456', providerConfigKey: 'x' }));
    publisher.publish(subject, JSON.stringify({ environmentId: 1, providerConfigKey: 'after' }));
    expect(await nextOf(received, 1)).toEqual([{ environmentId: 1, providerConfigKey: 'after' }]);
    expect(received).toHaveLength(1);
    const lines = warn.mock.calls.map((call) => String(call[0]));
    expect(lines).toEqual([
      `${subject}: dropped a message that is not JSON`,
      `${subject}: dropped a message that does not match its schema (environmentId: invalid_type)`,
    ]);
    expect(lines.join('\n')).not.toContain('secret-token');
  });

  it('keeps listening after a handler throws or rejects', async () => {
    const subject = `${prefix}.throws`;
    const received: Change[] = [];
    await listen(subject, async (change) => {
      if (change.providerConfigKey === 'throw') throw new Error('handler broke');
      if (change.providerConfigKey === 'reject') return Promise.reject(new Error('handler rejected'));
      received.push(change);
    });
    // An async handler's throw arrives as a rejection; a plain function's throw is synchronous.
    const syncSubject = `${prefix}.throws-sync`;
    await listen(syncSubject, (change) => {
      if (change.providerConfigKey === 'throw') throw new Error('sync handler broke');
      received.push(change);
    });
    publisher.publish(subject, JSON.stringify({ environmentId: 1, providerConfigKey: 'throw' }));
    publisher.publish(subject, JSON.stringify({ environmentId: 1, providerConfigKey: 'reject' }));
    publisher.publish(syncSubject, JSON.stringify({ environmentId: 1, providerConfigKey: 'throw' }));
    publisher.publish(subject, JSON.stringify({ environmentId: 2, providerConfigKey: 'next' }));
    publisher.publish(syncSubject, JSON.stringify({ environmentId: 3, providerConfigKey: 'next' }));
    const arrived = await nextOf(received, 2);
    expect(arrived).toEqual(
      expect.arrayContaining([
        { environmentId: 2, providerConfigKey: 'next' },
        { environmentId: 3, providerConfigKey: 'next' },
      ]),
    );
    const failures = error.mock.calls.map((call) => String(call[0])).sort();
    expect(failures).toEqual(
      [
        `${subject} handler failed: handler broke`,
        `${subject} handler failed: handler rejected`,
        `${syncSubject} handler failed: sync handler broke`,
      ].sort(),
    );
  });

  it('delivers each message to every listener of the subject (no queue group)', async () => {
    const subject = `${prefix}.fanout`;
    const first: Change[] = [];
    const second: Change[] = [];
    await listen(subject, (change) => {
      first.push(change);
    });
    await listen(subject, (change) => {
      second.push(change);
    });
    for (let i = 0; i < 3; i++)
      publisher.publish(subject, JSON.stringify({ environmentId: i, providerConfigKey: 'shared' }));
    const expected = [0, 1, 2].map((environmentId) => ({ environmentId, providerConfigKey: 'shared' }));
    expect(await nextOf(first, 3)).toEqual(expected);
    expect(await nextOf(second, 3)).toEqual(expected);
  });
});
