import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadCatalog } from './catalog';
import { ProviderCatalogError } from './catalog.errors';
import { connectionConfigValueProblems, hostFieldNames, originPlaceholders } from './host-fields';
import { ProviderDefinitionSchema } from './schema';

const base = { display_name: 'Acme', categories: ['other'], docs: 'https://acme.example/docs' };
const oauth = {
  ...base,
  auth_mode: 'OAUTH2',
  authorization_url: 'https://login.acme.example/authorize',
  token_url: 'https://${connectionConfig.hostname}/oauth/token',
};

describe('host fields', () => {
  it('finds the placeholders that land in a URL origin, whatever the template starts with', () => {
    expect(
      originPlaceholders('https://${connectionConfig.subdomain}.zendesk.com/x/${connectionConfig.id}'),
    ).toEqual(['subdomain']);
    expect(originPlaceholders('${connectionConfig.instance_url}/services/${connectionConfig.v}')).toEqual([
      'instance_url',
    ]);
    expect(
      originPlaceholders('https://a.example/${connectionConfig.p} || ${connectionConfig.accounts-server}/t'),
    ).toEqual(['accounts-server']);
  });

  it('the validator refuses a host field without a pattern', () => {
    const result = ProviderDefinitionSchema.safeParse({
      ...oauth,
      connection_config: { hostname: { type: 'string', title: 'Host', format: 'hostname' } },
    });
    expect(result.success).toBe(false);
    expect(result.error?.issues.map((i) => [i.path.join('.'), i.message])).toEqual([
      ['connection_config.hostname', expect.stringContaining('needs a pattern pinned')],
    ]);
  });

  it('the validator refuses a pattern that does not pin the host to the provider domain', () => {
    const result = ProviderDefinitionSchema.safeParse({
      ...oauth,
      connection_config: { hostname: { type: 'string', title: 'Host', pattern: '^[a-zA-Z0-9.-]+$' } },
    });
    expect(result.error?.issues[0]?.message).toContain('does not pin the host');
    expect(result.error?.issues[0]?.message).toContain('"evil.example"');
  });

  it('the validator refuses a host placeholder that is not declared at all', () => {
    const result = ProviderDefinitionSchema.safeParse({
      ...oauth,
      token_url: '${connectionConfig.server}/oauth/token',
      token_response_metadata: ['server'],
    });
    expect(result.error?.issues.map((i) => i.path.join('.'))).toEqual(['connection_config.server']);
  });

  it('accepts a pinned host field', () => {
    const result = ProviderDefinitionSchema.safeParse({
      ...oauth,
      connection_config: {
        hostname: { type: 'string', title: 'Host', pattern: '^[a-z0-9-]+\\.acme\\.example$' },
      },
    });
    expect(result.error?.issues).toBeUndefined();
  });

  it('lets a self-hosted API-key provider use any host, but still not without a pattern', () => {
    const apiKey = {
      ...base,
      auth_mode: 'API_KEY',
      proxy: { base_url: 'https://${connectionConfig.host}' },
    };
    expect(
      ProviderDefinitionSchema.safeParse({
        ...apiKey,
        connection_config: { host: { type: 'string', title: 'Host', pattern: '^[a-z0-9.-]+$' } },
      }).success,
    ).toBe(true);
    expect(
      ProviderDefinitionSchema.safeParse({
        ...apiKey,
        connection_config: { host: { type: 'string', title: 'Host', format: 'hostname' } },
      }).success,
    ).toBe(false);
  });

  it('the catalog validator (loadCatalog, as validate-cli runs it) fails on such an entry in a file', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'host-fields-'));
    const file = path.join(dir, 'providers.yaml');
    writeFileSync(
      file,
      `acme-crm:
  display_name: Acme CRM
  categories: [crm]
  docs: https://acme.example/docs
  auth_mode: OAUTH2
  authorization_url: https://\${connectionConfig.hostname}/authorize
  token_url: https://\${connectionConfig.hostname}/token
  connection_config:
    hostname:
      type: string
      title: Host
      format: hostname
`,
    );
    try {
      expect(() => loadCatalog({ overridesFile: file })).toThrow(ProviderCatalogError);
      expect(() => loadCatalog({ overridesFile: file })).toThrow(/acme-crm\.connection_config\.hostname/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('every built-in OAuth provider pins its host fields', () => {
    const catalog = loadCatalog();
    const salesforce = catalog.get('salesforce')!;
    expect(hostFieldNames(salesforce).sort()).toEqual(['hostname', 'instance_url']);
    expect(connectionConfigValueProblems(salesforce, { hostname: 'evil.example' })).toEqual([
      ['hostname', 'has an invalid format'],
    ]);
    expect(connectionConfigValueProblems(salesforce, { hostname: 'acme.my.salesforce.com' })).toEqual([]);
    expect(
      connectionConfigValueProblems(catalog.get('zoho')!, { 'accounts-server': 'https://evil.example' }),
    ).toEqual([['accounts-server', 'has an invalid format']]);
  });

  it('refuses an undeclared value that would name a host', () => {
    const provider = { auth_mode: 'OAUTH2', token_url: '${connectionConfig.server}/token' };
    expect(connectionConfigValueProblems(provider, { server: 'https://evil.example' })).toEqual([
      ['server', 'is not a declared field and cannot name a host'],
    ]);
  });
});
