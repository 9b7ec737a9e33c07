import { EgressPolicy } from './egress-policy';

describe('EgressPolicy', () => {
  const policy = new EgressPolicy('127.0.0.1, internal.example.test, 10.20.0.0/16');
  const strict = new EgressPolicy('');

  it.each([
    '127.0.0.2',
    '127.0.0.1',
    '10.0.0.1',
    '172.16.5.4',
    '192.168.1.1',
    '100.64.0.1',
    '169.254.169.254',
    '0.0.0.0',
    '255.255.255.255',
    '224.0.0.1',
    '192.0.0.192',
    '::1',
    '::',
    'fe80::1',
    'fc00::1',
    'fd00:ec2::254',
    '::ffff:127.0.0.1',
    '::ffff:7f00:2',
    '::ffff:169.254.169.254',
    '64:ff9b::a00:1',
    '64:ff9b::7f00:1',
    '64:ff9b:1::1',
    '2002:a00:1::',
    '2002:7f00:1::',
    '2001::1',
    'ff02::1',
    // IPv4-compatible IPv6 (::/96): refused whatever the IPv4 part, public ones included.
    '::127.0.0.1',
    '::7f00:1',
    '::10.0.0.1',
    '::169.254.169.254',
    '::8.8.8.8',
    '[::7f00:1]',
  ])('refuses %s by default', (address) => {
    expect(strict.checkAddress(address)).toEqual({ allowed: false, reason: expect.any(String) });
  });

  it.each(['8.8.8.8', '2606:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::'])(
    'lets public %s through',
    (address) => {
      expect(strict.checkAddress(address)).toEqual({ allowed: true });
    },
  );

  it('opens exactly the listed exceptions', () => {
    expect(policy.checkAddress('127.0.0.1').allowed).toBe(true);
    expect(policy.checkAddress('::ffff:127.0.0.1').allowed).toBe(true);
    expect(policy.checkAddress('127.0.0.2').allowed).toBe(false);
    expect(policy.checkAddress('::1').allowed).toBe(false);
    expect(policy.checkAddress('10.20.3.4').allowed).toBe(true);
    expect(policy.checkAddress('10.21.3.4').allowed).toBe(false);
    expect(policy.hostAllowed('Internal.Example.Test.')).toBe(true);
    expect(policy.checkHost('internal.example.test').allowed).toBe(true);
  });

  it('refuses names that always mean this machine or the metadata service', () => {
    for (const host of [
      'localhost',
      'LOCALHOST.',
      'foo.localhost',
      'metadata.google.internal',
      'metadata.google.internal.',
    ]) {
      expect(policy.checkHost(host).allowed).toBe(false);
    }
    expect(policy.checkHost('api.example.com').allowed).toBe(true);
    expect(policy.checkHost('[::1]').allowed).toBe(false);
  });

  it('refuses an IPv4-compatible literal in a URL before any connection, even when its IPv4 address is allowed', () => {
    expect(strict.urlProblem('http://[::127.0.0.1]:8080/x')).toMatch(/IPv4-compatible/);
    expect(policy.checkHost('[::7f00:1]')).toEqual({
      allowed: false,
      reason: expect.stringMatching(/::\/96/),
    });
    expect(policy.checkAddress('::127.0.0.1').allowed).toBe(false);
    expect(policy.checkAddress('::ffff:127.0.0.1').allowed).toBe(true);
  });

  it("reads a traffic's own list when its variable is set (even empty), else the shared one", () => {
    const shared = '127.0.0.1';
    const proxy = EgressPolicy.forTraffic('SWITCHBOARD_PROXY_EGRESS_ALLOW', '', shared);
    const webhooks = EgressPolicy.forTraffic('SWITCHBOARD_WEBHOOK_EGRESS_ALLOW', '10.1.0.0/16', shared);
    const tokens = EgressPolicy.forTraffic('SWITCHBOARD_TOKEN_EGRESS_ALLOW', undefined, shared);
    expect(proxy.checkAddress('127.0.0.1').allowed).toBe(false);
    expect(webhooks.checkAddress('127.0.0.1').allowed).toBe(false);
    expect(webhooks.checkAddress('10.1.2.3').allowed).toBe(true);
    expect(tokens.checkAddress('127.0.0.1').allowed).toBe(true);
    expect(() => EgressPolicy.forTraffic('SWITCHBOARD_PROXY_EGRESS_ALLOW', 'nope', shared)).toThrow(
      /^SWITCHBOARD_PROXY_EGRESS_ALLOW: "nope"/,
    );
  });

  it('fails the boot on a malformed CIDR', () => {
    expect(() => new EgressPolicy('10.0.0.0/99')).toThrow(/SWITCHBOARD_EGRESS_ALLOW/);
  });
});
