import { natsConnectionOptions, redactedNatsUrl } from './nats-connection';

describe('natsConnectionOptions', () => {
  it("connects as the process's own user with an inbox only that user may read", () => {
    expect(
      natsConnectionOptions(
        { NATS_URL: 'nats://a:4222,nats://b:4222', NATS_USER: 'proxy', NATS_PASSWORD: 'pw0123456789abcdef' },
        'proxy-server',
      ),
    ).toMatchObject({
      servers: ['nats://a:4222', 'nats://b:4222'],
      name: 'proxy-server',
      user: 'proxy',
      pass: 'pw0123456789abcdef',
      inboxPrefix: '_INBOX.proxy',
    });
  });

  it('connects without credentials (and the default inbox) when none are set', () => {
    const options = natsConnectionOptions({ NATS_URL: 'nats://127.0.0.1:4222' }, 'gateway');
    expect(options).not.toHaveProperty('user');
    expect(options).not.toHaveProperty('inboxPrefix');
  });

  it('refuses a user without a password and a password without a user', () => {
    expect(() => natsConnectionOptions({ NATS_URL: 'nats://x', NATS_USER: 'gateway' }, 'gateway')).toThrow(
      'NATS_USER and NATS_PASSWORD go together: NATS_PASSWORD is not set',
    );
    expect(() =>
      natsConnectionOptions({ NATS_URL: 'nats://x', NATS_PASSWORD: 'pw0123456789abcdef' }, 'gateway'),
    ).toThrow('NATS_USER is not set');
  });
});

describe('redactedNatsUrl', () => {
  it('leaves credentials out of every server of the list, and the rest as it was', () => {
    expect(redactedNatsUrl('nats://svc:s3cret@a:4222,nats://token@b:4222,nats://c:4222')).toBe(
      'nats://a:4222,nats://b:4222,nats://c:4222',
    );
  });
});
