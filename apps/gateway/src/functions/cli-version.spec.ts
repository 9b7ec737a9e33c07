import { assertCliVersion } from './cli-version';

describe('assertCliVersion', () => {
  it('lets the current CLI and non-CLI clients through', () => {
    expect(() => assertCliVersion('nango-cli/0.71.10 (linux/6.1; node.js/24.21.0)')).not.toThrow();
    expect(() => assertCliVersion('nango-cli/0.39.25 (darwin/23.0; node.js/20.0.0)')).not.toThrow();
    expect(() => assertCliVersion('switchboard-cli/0.1.0')).not.toThrow();
    expect(() => assertCliVersion(undefined)).not.toThrow();
  });

  it('refuses a CLI older than the oldest deploy payload we read, saying which version to install', () => {
    expect(() => assertCliVersion('nango-cli/0.39.24 (linux/6.1; node.js/18.0.0)')).toThrow(
      expect.objectContaining({ code: 'invalid_cli_version', message: expect.stringContaining('0.39.25') }),
    );
    expect(() => assertCliVersion('nango-cli/0.9.100 (linux/6.1; node.js/18.0.0)')).toThrow(
      expect.objectContaining({ code: 'invalid_cli_version' }),
    );
  });
});
