import { createHash, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BUILT_IN_CATALOG_PATH, COMPILED_CATALOG_PATH, loadCatalog } from './catalog';
import { ProviderCatalogError } from './catalog.errors';
import { CORE_PROVIDERS, MIN_PROVIDER_COUNT, coverageProblems, requiredProviderKeys } from './coverage';
import { parse as parseYaml } from 'yaml';
import { ProviderDefinitionSchema } from './schema';

// A 2048-bit RSA public key (base64 DER SubjectPublicKeyInfo), for recipes that pin one.
const RSA_SPKI = generateKeyPairSync('rsa', { modulusLength: 2048 })
  .publicKey.export({ type: 'spki', format: 'der' })
  .toString('base64');

describe('built-in catalog', () => {
  const catalog = loadCatalog();

  it('has at least 500 providers, each a valid definition, and every core provider', () => {
    expect(MIN_PROVIDER_COUNT).toBe(500);
    expect(catalog.size).toBeGreaterThanOrEqual(500);
    for (const provider of catalog.list()) {
      const { name, ...definition } = provider;
      const parsed = ProviderDefinitionSchema.safeParse(definition);
      expect([name, parsed.success ? 'valid' : parsed.error.message]).toEqual([name, 'valid']);
    }
    expect(coverageProblems(catalog, [])).toEqual([]);
  });

  it('contains every provider key of catalog/required-providers.yaml', () => {
    const required = requiredProviderKeys();
    expect(required.length).toBeGreaterThanOrEqual(90);
    expect(required.filter((name) => catalog.get(name) === undefined)).toEqual([]);
  });

  it('reports a missing required key and a catalog below the minimum size', () => {
    expect(coverageProblems(catalog, ['github', 'no-such-provider'])).toEqual([
      'required provider "no-such-provider" (catalog/required-providers.yaml) is missing',
    ]);
    const tiny = { size: 3, get: (name: string) => catalog.get(name) } as unknown as typeof catalog;
    expect(coverageProblems(tiny, [])).toContain('the catalog has 3 providers; at least 500 are required');
  });

  it.each(Object.entries(CORE_PROVIDERS))('resolves %s with auth mode %s', (name, authMode) => {
    const provider = catalog.get(name);
    expect(provider).toBeDefined();
    expect(provider?.name).toBe(name);
    expect(provider?.auth_mode).toBe(authMode);
  });

  it('resolves aliases by a shallow merge over the target', () => {
    const google = catalog.get('google');
    const calendar = catalog.get('google-calendar');
    expect(calendar?.alias).toBe('google');
    expect(calendar?.display_name).toBe('Google Calendar');
    expect(calendar?.authorization_url).toBe(google?.authorization_url);
    expect(calendar?.token_url).toBe(google?.token_url);
    expect(calendar?.authorization_params).toEqual({
      response_type: 'code',
      access_type: 'offline',
      prompt: 'consent',
    });
    expect(catalog.get('google-mail')?.proxy?.base_url).toBe('https://gmail.googleapis.com');

    expect(catalog.get('outlook')?.token_url).toBe(catalog.get('microsoft')?.token_url);
    expect(catalog.get('confluence')?.authorization_url).toBe(catalog.get('jira')?.authorization_url);

    const githubApp = catalog.get('github-app');
    expect(githubApp?.auth_mode).toBe('APP');
    expect(githubApp?.proxy?.base_url).toBe('https://api.github.com');

    const tba = catalog.get('netsuite-tba');
    expect(tba?.auth_mode).toBe('TBA');
    expect(tba?.proxy?.base_url).toBe(catalog.get('netsuite')?.proxy?.base_url);
  });

  it('gives every OAuth2 provider https authorization and token URLs', () => {
    const oauth2 = catalog.list().filter((provider) => provider.auth_mode === 'OAUTH2');
    expect(oauth2.length).toBeGreaterThan(50);
    for (const provider of oauth2) {
      for (const url of [provider.authorization_url, provider.token_url]) {
        const alternatives = (url ?? '').split('||').map((part) => part.trim());
        // The first alternative must be a real https URL; a fallback may come wholly from connection data.
        expect([provider.name, alternatives[0]?.startsWith('https://')]).toEqual([provider.name, true]);
        for (const alternative of alternatives) {
          expect([provider.name, /^(https:\/\/|\$\{connectionConfig\.)/.test(alternative)]).toEqual([
            provider.name,
            true,
          ]);
        }
      }
    }
  });

  it('asks every Microsoft client-credentials provider for the .default scope of the API it proxies to', () => {
    const scopes = Object.fromEntries(
      catalog
        .names()
        .filter((name) => /^microsoft-.*-cc$|^microsoft-oauth2-cc$/.test(name))
        .map((name) => [name, catalog.get(name)?.token_params?.['scope']]),
    );
    expect(scopes).toEqual({
      'microsoft-dynamics-365-finance-and-operations-cc':
        'https://${connectionConfig.environmentUrl}/.default',
      'microsoft-excel-oauth2-cc': 'https://graph.microsoft.com/.default',
      'microsoft-oauth2-cc': 'https://graph.microsoft.com/.default',
      'microsoft-power-bi-oauth2-cc': 'https://analysis.windows.net/powerbi/api/.default',
      'microsoft-powerpoint-oauth2-cc': 'https://graph.microsoft.com/.default',
      'microsoft-word-oauth2-cc': 'https://graph.microsoft.com/.default',
    });
  });

  it('gives Auth0 client credentials and ConnectSecure patterns for every connection-config field', () => {
    for (const name of ['auth0-cc', 'connectsecure', 'microsoft-dynamics-365-finance-and-operations-cc']) {
      const fields = catalog.get(name)?.connection_config ?? {};
      for (const [field, spec] of Object.entries(fields))
        if (field !== 'tenantId')
          expect([name, field, spec.pattern]).toEqual([name, field, expect.any(String)]);
    }
  });

  it('links every provider to https documentation', () => {
    for (const provider of catalog.list()) {
      expect([provider.name, provider.docs.startsWith('https://')]).toEqual([provider.name, true]);
    }
  });

  it('searches key and display name case-insensitively, as plain text', () => {
    const git = catalog.list('git').map((provider) => provider.name);
    expect(git).toEqual(expect.arrayContaining(['github', 'gitlab', 'github-app']));
    expect(catalog.list('GITHUB').map((provider) => provider.name)).toContain('github');
    expect(catalog.list('gmail').map((provider) => provider.name)).toEqual(['google-mail']);
    expect(() => catalog.list('(')).not.toThrow();
    expect(() => catalog.list('[')).not.toThrow();
    expect(catalog.list('.*')).toEqual([]);
    expect(catalog.list()).toHaveLength(catalog.size);
    expect(catalog.list('  ')).toHaveLength(catalog.size);
  });

  it('lists providers sorted by key', () => {
    const names = catalog.names();
    expect(names).toEqual([...names].sort());
    expect(catalog.list().map((provider) => provider.name)).toEqual(names);
  });

  it('hands out providers that cannot be mutated', () => {
    const slack = catalog.get('slack');
    expect(Object.isFrozen(slack)).toBe(true);
    expect(Object.isFrozen(slack?.proxy)).toBe(true);
    expect(catalog.get('__proto__')).toBeUndefined();
  });

  it('reads the catalog shipped next to the package sources', () => {
    expect(BUILT_IN_CATALOG_PATH).toBe(path.resolve(__dirname, '..', 'catalog', 'providers.yaml'));
  });

  it("starts from the build's compiled catalog, made from this YAML and holding the same providers", () => {
    const compiled = JSON.parse(readFileSync(COMPILED_CATALOG_PATH, 'utf8')) as { source: string };
    const yaml = readFileSync(BUILT_IN_CATALOG_PATH);
    expect(compiled.source).toBe(createHash('sha256').update(yaml).digest('hex'));
    // The same file as an overrides file replaces every entry with one parsed and checked from the YAML.
    const parsed = loadCatalog({ overridesFile: BUILT_IN_CATALOG_PATH });
    expect(catalog.list()).toEqual(parsed.list());
    expect(catalog.size).toBe(parsed.size);
  });
});

describe('operator overrides file', () => {
  let dir: string;
  const write = (name: string, content: string): string => {
    const file = path.join(dir, name);
    writeFileSync(file, content);
    return file;
  };
  const loadError = (file: string): ProviderCatalogError => {
    try {
      loadCatalog({ overridesFile: file });
    } catch (error) {
      if (error instanceof ProviderCatalogError) return error;
      throw error;
    }
    throw new Error('expected loadCatalog to fail');
  };

  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'switchboard-providers-'));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('adds an in-house provider and replaces an existing one wholly', () => {
    const builtInSize = loadCatalog().size;
    const file = write(
      'providers.yaml',
      `
acme-internal:
  display_name: Acme Internal API
  categories: [other]
  auth_mode: API_KEY
  docs: https://wiki.acme.example/api
  proxy:
    base_url: https://api.acme.example/\${connectionConfig.tenant}
    headers:
      x-acme-key: \${apiKey}
  connection_config:
    tenant:
      type: string
      title: Tenant
  credentials:
    apiKey:
      type: string
      title: API key
      secret: true
github:
  display_name: GitHub Enterprise Server
  categories: [dev-tools]
  auth_mode: OAUTH2
  authorization_url: https://\${connectionConfig.hostname}/login/oauth/authorize
  token_url: https://\${connectionConfig.hostname}/login/oauth/access_token
  docs: https://docs.github.com/en/enterprise-server@latest/rest
  proxy:
    base_url: https://\${connectionConfig.hostname}/api/v3
  connection_config:
    hostname:
      type: string
      title: GitHub Enterprise host
      format: hostname
      pattern: '^github\\.acme\\.example$'
`,
    );

    const catalog = loadCatalog({ overridesFile: file });

    expect(catalog.size).toBe(builtInSize + 1);
    const acme = catalog.get('acme-internal');
    expect(acme?.auth_mode).toBe('API_KEY');
    expect(acme?.proxy?.headers).toEqual({ 'x-acme-key': '${apiKey}' });
    const github = catalog.get('github');
    expect(github?.display_name).toBe('GitHub Enterprise Server');
    expect(github?.proxy).toEqual({ base_url: 'https://${connectionConfig.hostname}/api/v3' });
    expect(catalog.list('acme').map((provider) => provider.name)).toEqual(['acme-internal']);
    // Built-in aliases of a replaced key keep the built-in target: overrides do not re-resolve them.
    expect(catalog.get('github-app')?.proxy?.base_url).toBe('https://api.github.com');
  });

  it('merges over a built-in provider when the entry aliases its own key or another one', () => {
    const file = write(
      'providers.yaml',
      `
slack:
  alias: slack
  display_name: Slack (our workspace)
my-drive:
  alias: google
  display_name: Team Drive
  categories: [storage]
  docs: https://wiki.acme.example/drive
  proxy:
    base_url: https://www.googleapis.com/drive/v3
`,
    );

    const catalog = loadCatalog({ overridesFile: file });

    const slack = catalog.get('slack');
    expect(slack?.display_name).toBe('Slack (our workspace)');
    expect(slack?.authorization_url).toBe('https://slack.com/oauth/v2/authorize');
    expect(slack).not.toHaveProperty('alias');
    const drive = catalog.get('my-drive');
    expect(drive?.alias).toBe('google');
    expect(drive?.token_url).toBe('https://oauth2.googleapis.com/token');
    expect(drive?.proxy?.base_url).toBe('https://www.googleapis.com/drive/v3');
  });

  it('fails with the file path, provider key and field path of every problem', () => {
    const file = write(
      'broken.yaml',
      `
acme-internal:
  display_name: Acme
  categories: [other]
  auth_mode: OAUTH2
  authorization_url: https://auth.acme.example/authorize
  token_url: http://auth.acme.example/token
  docs: https://wiki.acme.example
  colour: blue
acme-tenant:
  display_name: Acme tenant
  categories: [other]
  auth_mode: API_KEY
  docs: https://wiki.acme.example
  proxy:
    base_url: https://\${connectionConfig.tenant}.acme.example
    retry:
      error_code: ['teapot']
acme-undeclared:
  display_name: Acme undeclared
  categories: [other]
  auth_mode: API_KEY
  docs: https://wiki.acme.example
  proxy:
    base_url: https://\${connectionConfig.region}.acme.example
`,
    );

    const error = loadError(file);

    expect(error.code).toBe('catalog_invalid');
    expect(error.message).toContain(`${file}: acme-internal.token_url:`);
    expect(error.message).toContain('must start with https://');
    expect(error.message).toContain(`${file}: acme-internal.colour: unknown field "colour"`);
    expect(error.message).toContain(`${file}: acme-tenant.proxy.retry.error_code[0]:`);
    expect(error.message).toContain(`${file}: acme-undeclared.proxy.base_url:`);
    expect(error.message).toContain('"region" is not declared in connection_config');
    expect(error.problems).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ file, provider: 'acme-internal', path: 'token_url' }),
        expect.objectContaining({ file, provider: 'acme-internal', path: 'colour' }),
      ]),
    );
  });

  it('refuses alias chains and unknown alias targets', () => {
    const file = write(
      'aliases.yaml',
      `
my-calendar:
  alias: google-calendar
my-ghost:
  alias: does-not-exist
lonely:
  alias: lonely
`,
    );

    const error = loadError(file);

    expect(error.message).toContain(
      `${file}: my-calendar.alias: refers to "google-calendar", which is itself an alias of "google"`,
    );
    expect(error.message).toContain(`${file}: my-ghost.alias: refers to "does-not-exist"`);
    expect(error.message).toContain(`${file}: lonely.alias: refers to its own key`);
  });

  it('requires the OAuth endpoints of a redirect flow', () => {
    const file = write(
      'oauth.yaml',
      `
acme-oauth1:
  display_name: Acme
  categories: [other]
  auth_mode: OAUTH1
  authorization_url: https://acme.example/authorize
  token_url: https://acme.example/token
  docs: https://wiki.acme.example
`,
    );

    expect(loadError(file).message).toContain('acme-oauth1.request_url: is required for auth_mode OAUTH1');
  });

  it('reports YAML syntax errors and unreadable files', () => {
    const broken = write('syntax.yaml', 'acme:\n  display_name: [unclosed\n');
    expect(loadError(broken).message).toContain(`${broken}: is not valid YAML`);

    const missing = path.join(dir, 'missing.yaml');
    const error = loadError(missing);
    expect(error.code).toBe('catalog_unreadable');
    expect(error.message).toContain(missing);
  });

  it('reads a webhook section and refuses unknown fields in it', () => {
    const good = write(
      'webhook.yaml',
      `
acme-hooks:
  display_name: Acme hooks
  categories: [other]
  auth_mode: NONE
  docs: https://wiki.acme.example
  webhook:
    signature: { header: x-acme-signature, prefix: 'sha256=' }
    routing:
      - value: { from: body, path: account.id }
        match: metadata.acme_account
`,
    );
    expect(loadCatalog({ overridesFile: good }).get('acme-hooks')?.webhook).toEqual({
      signature: {
        header: 'x-acme-signature',
        prefix: 'sha256=',
        algorithm: 'hmac-sha256',
        encoding: 'hex',
        scheme: 'plain',
        payload: '{body}',
        secret: 'webhook_secret',
      },
      routing: [{ value: { from: 'body', path: 'account.id' }, match: 'metadata.acme_account' }],
    });

    const bad = write(
      'webhook-bad.yaml',
      `
acme-hooks:
  display_name: Acme hooks
  categories: [other]
  auth_mode: NONE
  docs: https://wiki.acme.example
  webhook:
    signature: { header: x-acme-signature, algorithm: md5 }
    events: [created]
`,
    );
    const message = loadError(bad).message;
    expect(message).toContain('webhook.signature.algorithm');
    expect(message).toContain('events');
  });

  it.each([
    [
      'a public key that does not parse',
      `{ header: x-sig, algorithm: ed25519, encoding: base64, public_key: not-a-key }`,
      'webhook.signature.public_key: is not a readable public key',
    ],
    [
      'an RSA key pinned for ed25519',
      `{ header: x-sig, algorithm: ed25519, public_key: "${RSA_SPKI}" }`,
      'webhook.signature.public_key: is not a key for ed25519',
    ],
    [
      'a public key on an HMAC recipe',
      `{ header: x-sig, public_key: "${RSA_SPKI}" }`,
      'webhook.signature.public_key: applies to rsa-sha256 and ed25519 only',
    ],
    [
      'a public-key algorithm keyed by the client secret',
      `{ header: x-sig, algorithm: rsa-sha256, secret: client_secret }`,
      'webhook.signature.secret: must be webhook_secret',
    ],
    [
      'a key encoding on a public key',
      `{ header: x-sig, algorithm: ed25519, secret_encoding: base64 }`,
      'webhook.signature.secret_encoding: applies to HMAC keys only',
    ],
    [
      'an unknown key encoding',
      `{ header: x-sig, secret_encoding: base32 }`,
      'webhook.signature.secret_encoding',
    ],
    ['no header outside a jwt', `{ algorithm: hmac-sha256 }`, 'webhook.signature.header: is required'],
    [
      'a jwt with a signed-payload template',
      `{ scheme: jwt, payload: '{timestamp}.{body}', timestamp: { from: header, name: x-t, format: unix, tolerance_seconds: 60 } }`,
      'webhook.signature.payload: cannot be set for a jwt',
    ],
    [
      'a jwt signed with sha1',
      `{ scheme: jwt, algorithm: hmac-sha1 }`,
      'webhook.signature.algorithm: a jwt is checked',
    ],
    [
      'a separator on a key-value header',
      `{ header: x-sig, scheme: key-value, signature_key: v1, separator: ' ' }`,
      'webhook.signature.separator: needs scheme plain',
    ],
    [
      'a digest without the secret in it',
      `{ header: x-sig, algorithm: sha256 }`,
      'webhook.signature.payload: must include {secret} for sha256',
    ],
    [
      'the secret in an HMAC payload',
      `{ header: x-sig, payload: '{secret}{body}' }`,
      'webhook.signature.payload: may include {secret} only with a digest algorithm',
    ],
    [
      'a key encoding on a digest',
      `{ header: x-sig, algorithm: sha1, payload: '{body}{secret}', secret_encoding: hex }`,
      'webhook.signature.secret_encoding: applies to HMAC keys only',
    ],
    [
      'a jwt checked as a digest',
      `{ scheme: jwt, algorithm: sha256 }`,
      'webhook.signature.algorithm: a jwt cannot be checked as a digest',
    ],
    [
      'a payload without the body',
      `{ header: x-sig, payload: '{timestamp}' }`,
      'must include {body} or {body_base64}',
    ],
  ])('refuses a webhook signature with %s', (_name, signature, problem) => {
    // The entry schema alone (what the catalog build runs for every entry), without loading the catalog.
    const result = ProviderDefinitionSchema.safeParse({
      display_name: 'Acme hooks',
      categories: ['other'],
      auth_mode: 'NONE',
      docs: 'https://wiki.acme.example',
      webhook: { signature: parseYaml(signature) as unknown },
    });
    expect(result.success).toBe(false);
    const problems = result.error?.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`) ?? [];
    expect(problems.join('\n')).toContain(problem);
  });

  it('reads public-key, encoded-key, jwt and digest recipes', () => {
    const file = write(
      'webhook-schemes.yaml',
      `
acme-hooks:
  display_name: Acme hooks
  categories: [other]
  auth_mode: API_KEY
  docs: https://wiki.acme.example
  proxy: { base_url: https://api.acme.example, headers: { authorization: 'Bearer \${apiKey}' } }
  webhook:
    signature: { header: x-sig, algorithm: rsa-sha256, encoding: base64, public_key: "${RSA_SPKI}" }
acme-std:
  display_name: Acme standard
  categories: [other]
  auth_mode: NONE
  docs: https://wiki.acme.example
  webhook:
    signature: { header: x-sig, separator: ' ', prefix: 'v1,', secret_prefix: whsec_, secret_encoding: base64, payload: '{body_base64}' }
acme-jwt:
  display_name: Acme JWT
  categories: [other]
  auth_mode: NONE
  docs: https://wiki.acme.example
  webhook:
    signature: { scheme: jwt, algorithm: ed25519 }
acme-digest:
  display_name: Acme digest
  categories: [other]
  auth_mode: NONE
  docs: https://wiki.acme.example
  webhook:
    signature: { header: x-sig, algorithm: sha512, encoding: base64, payload: '{body}.{secret}' }
`,
    );
    const catalog = loadCatalog({ overridesFile: file });
    expect(catalog.get('acme-hooks')?.webhook?.signature).toMatchObject({ algorithm: 'rsa-sha256' });
    expect(catalog.get('acme-std')?.webhook?.signature).toMatchObject({
      secret_encoding: 'base64',
      separator: ' ',
    });
    expect(catalog.get('acme-jwt')?.webhook?.signature).toMatchObject({
      scheme: 'jwt',
      algorithm: 'ed25519',
    });
    expect(catalog.get('acme-digest')?.webhook?.signature).toMatchObject({
      algorithm: 'sha512',
      payload: '{body}.{secret}',
    });
  });
});
