import { EgressPolicy } from './egress-policy';

// Webhook URLs (the relay's use). Judged without any request being made: the policy only parses URLs
// and compares addresses.
describe('EgressPolicy.urlProblem', () => {
  const policy = new EgressPolicy();

  it.each([
    'http://127.0.0.1:8080/hook',
    'http://0x7f.1/hook',
    'http://2130706433/hook',
    'http://127.1/hook',
    'http://0177.0.0.1/hook',
    'http://localhost/hook',
    'http://api.localhost/hook',
    'http://10.1.2.3/hook',
    'http://172.16.0.1/hook',
    'http://192.168.1.1/hook',
    'http://169.254.169.254/latest/meta-data',
    'http://100.64.0.1/hook',
    'http://0.0.0.0/hook',
    'http://[::1]/hook',
    'http://[fe80::1]/hook',
    'http://[fd00::1]/hook',
    'http://[::ffff:127.0.0.1]/hook',
    'http://[::ffff:169.254.169.254]/hook',
    'http://224.0.0.1/hook',
  ])('refuses %s', (url) => {
    expect(policy.urlProblem(url)).toBeDefined();
  });

  it.each([
    'https://hooks.example.com/switchboard',
    'http://93.184.216.34/hook',
    'https://[2606:4700::1111]/x',
  ])('allows %s', (url) => {
    expect(policy.urlProblem(url)).toBeUndefined();
  });

  it('refuses other schemes and embedded credentials', () => {
    expect(policy.urlProblem('ftp://hooks.example.com/x')).toBe('must use http or https');
    expect(policy.urlProblem('https://user:pw@hooks.example.com/x')).toBe('must not contain credentials');
    expect(policy.urlProblem('not a url')).toBe('is not a valid URL');
  });

  it('lets an operator open a CIDR (and only that one)', () => {
    const open = new EgressPolicy(['127.0.0.1/32', '10.20.0.0/16']);
    expect(open.urlProblem('http://127.0.0.1:9/hook')).toBeUndefined();
    expect(open.checkAddress('10.20.3.4').allowed).toBe(true);
    expect(open.checkAddress('10.21.0.1').allowed).toBe(false);
    expect(open.checkAddress('127.0.0.2').allowed).toBe(false);
  });

  it('refuses a malformed allow-list at boot', () => {
    expect(() => new EgressPolicy(['nonsense'])).toThrow(/not a CIDR/);
    expect(() => new EgressPolicy(['10.0.0.0/33'])).toThrow(/prefix/);
  });
});
