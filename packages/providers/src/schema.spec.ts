import { FormFieldSchema, ProviderDefinitionSchema, ProviderEntrySchema, urlTemplateProblem } from './schema';

describe('urlTemplateProblem', () => {
  it.each([
    'https://api.github.com',
    'https://${connectionConfig.subdomain}.zendesk.com/oauth/tokens',
    'https://api.${connectionConfig.siteParameter}/api',
    '${connectionConfig.instance_url}',
    '${connectionConfig.api_domain}/api',
    'https://${connectionConfig.hostname}/x || https://login.salesforce.com/x',
    'https://api.telegram.org/bot${apiKey}',
  ])('accepts %s', (url) => {
    expect(urlTemplateProblem(url)).toBeUndefined();
  });

  it.each([
    ['http://api.example.com', 'must start with https://'],
    ['ftp://files.example.com', 'must start with https://'],
    ['https://${connectionConfig.subdomain.example.com', 'unbalanced'],
    ['https://${}.example.com', 'malformed'],
    ['https://a.example.com || ', 'empty alternative'],
    ['https://a.example.com/some path', 'whitespace'],
  ])('rejects %s', (url, reason) => {
    expect(urlTemplateProblem(url)).toContain(reason);
  });
});

describe('ProviderEntrySchema', () => {
  const base = { display_name: 'Acme', categories: ['other'], docs: 'https://acme.example/docs' };

  it('lets an alias entry be a partial overlay', () => {
    expect(ProviderEntrySchema.safeParse({ alias: 'google', display_name: 'Acme' }).success).toBe(true);
  });

  it('accepts OAuth parameter renames, a token response path and SigV4 only in their declared shapes', () => {
    const oauth = {
      ...base,
      auth_mode: 'OAUTH2',
      authorization_url: 'https://acme.example/auth',
      token_url: 'https://acme.example/token',
    };
    const ok = ProviderEntrySchema.safeParse({
      ...oauth,
      authorization_param_names: { client_id: 'client_key' },
      token_param_names: { client_id: 'app_id', client_secret: 'secret', code: 'auth_code' },
      token_response_path: 'data',
      mutual_tls: true,
      proxy: { base_url: 'https://acme.example', aws_sigv4: { service: 'iam', region: 'us-east-1' } },
    });
    expect(ok.success).toBe(true);
    for (const bad of [
      { token_param_names: { nonce: 'n' } },
      { token_param_names: { code: 'auth code' } },
      { token_response_path: 'data..token' },
      { proxy: { base_url: 'https://acme.example', aws_sigv4: { service: 'IAM!', region: 'us-east-1' } } },
    ])
      expect(ProviderEntrySchema.safeParse({ ...oauth, ...bad }).success).toBe(false);
  });

  it('requires the core fields of a standalone entry', () => {
    const result = ProviderEntrySchema.safeParse({ display_name: 'Acme' });
    expect(result.success).toBe(false);
    const paths = result.error?.issues.map((issue) => issue.path.join('.'));
    expect(paths).toEqual(expect.arrayContaining(['categories', 'docs', 'auth_mode']));
  });

  it('rejects an unknown auth mode and unknown fields', () => {
    expect(ProviderEntrySchema.safeParse({ ...base, auth_mode: 'MAGIC' }).success).toBe(false);
    const result = ProviderEntrySchema.safeParse({
      ...base,
      auth_mode: 'NONE',
      homepage: 'https://acme.example',
    });
    expect(result.error?.issues[0]?.message).toContain('unknown field "homepage"');
  });

  it('requires a token URL for client credentials', () => {
    const result = ProviderDefinitionSchema.safeParse({ ...base, auth_mode: 'OAUTH2_CC' });
    expect(result.error?.issues.map((issue) => issue.path.join('.'))).toEqual(['token_url']);
  });
});

describe('FormFieldSchema', () => {
  it('rejects a pattern that is not a regular expression', () => {
    expect(FormFieldSchema.safeParse({ type: 'string', title: 'Key', pattern: '([a-z' }).success).toBe(false);
    expect(FormFieldSchema.safeParse({ type: 'string', title: 'Key', pattern: '^[a-z]+$' }).success).toBe(
      true,
    );
  });
});

describe('webhook routing keys', () => {
  const routed = (extra: Record<string, unknown>) => ({
    display_name: 'Acme',
    categories: ['other'],
    docs: 'https://acme.example/docs',
    auth_mode: 'OAUTH2',
    authorization_url: 'https://login.acme.example/authorize',
    token_url: 'https://login.acme.example/token',
    webhook: {
      routing: [{ value: { from: 'body', path: 'account' }, match: 'connection_config.accountId' }],
    },
    ...extra,
  });

  it('refuses a routing key the end user could set', () => {
    const result = ProviderDefinitionSchema.safeParse(
      routed({ connection_config: { accountId: { type: 'string', title: 'Account' } } }),
    );
    expect(result.error?.issues.map((i) => [i.path.join('.'), i.message])).toEqual([
      ['webhook.routing.0.match', expect.stringContaining('must come from the provider')],
    ]);
  });

  it.each([
    ['token_response_metadata', { token_response_metadata: ['accountId'] }],
    [
      'a post_connect call',
      {
        post_connect: [
          { url: 'https://api.acme.example/me', connection_config: { accountId: 'account.id' } },
        ],
      },
    ],
    [
      'a post_connect call picking the flagged element of a list',
      {
        post_connect: [
          {
            url: 'https://api.acme.example/me',
            connection_config: { accountId: 'accounts[is_default=true].account_id' },
          },
        ],
      },
    ],
  ])('accepts one the provider returns (%s)', (_source, extra) => {
    expect(ProviderDefinitionSchema.safeParse(routed(extra)).error?.issues).toBeUndefined();
  });

  /** The routed entry on another auth mode, without the OAuth URLs. */
  const routedOn = (auth_mode: string, extra: Record<string, unknown> = {}) => ({
    ...routed({
      post_connect: [{ url: 'https://api.acme.example/me', connection_config: { accountId: 'account.id' } }],
    }),
    auth_mode,
    authorization_url: undefined,
    token_url: undefined,
    ...extra,
  });

  it.each(['API_KEY', 'BASIC'])('accepts a post_connect call on %s, whose connect runs it', (mode) => {
    expect(ProviderDefinitionSchema.safeParse(routedOn(mode)).error?.issues).toBeUndefined();
  });

  it.each([
    ['OAUTH2_CC', { token_url: 'https://login.acme.example/token' }],
    ['NONE', {}],
    ['TBA', {}],
  ])('refuses a post_connect call on %s, whose connect never runs it', (mode, extra) => {
    const result = ProviderDefinitionSchema.safeParse(routedOn(mode, extra));
    expect(result.error?.issues.map((i) => [i.path.join('.'), i.message])).toEqual([
      [
        'post_connect',
        `runs after an OAuth 2 token exchange or an API key / basic connect only, not for auth_mode ${mode}`,
      ],
    ]);
  });

  it('refuses a post_connect header naming connection config the entry does not declare', () => {
    const call = (header: string) => ({
      url: 'https://api.acme.example/me',
      headers: { 'user-agent': header },
      connection_config: { accountId: 'account.id' },
    });
    const declared = { connection_config: { app: { type: 'string', title: 'App' } } };
    expect(
      ProviderDefinitionSchema.safeParse(
        routed({ ...declared, post_connect: [call('${connectionConfig.app}')] }),
      ).error?.issues,
    ).toBeUndefined();
    const result = ProviderDefinitionSchema.safeParse(
      routed({ ...declared, post_connect: [call('${connectionConfig.appName}')] }),
    );
    expect(result.error?.issues.map((i) => [i.path.join('.'), i.message])).toEqual([
      ['post_connect.0.headers.user-agent', expect.stringContaining('"appName" is not declared')],
    ]);
  });
});

describe('token-issuing auth modes', () => {
  const base = { display_name: 'Acme', categories: ['other'], docs: 'https://acme.example/docs' };
  const problems = (entry: Record<string, unknown>) =>
    ProviderDefinitionSchema.safeParse({ ...base, ...entry }).error?.issues.map(
      (issue) => `${issue.path.join('.')}: ${issue.message}`,
    ) ?? [];

  it('needs a signing family and a token template for JWT, and refuses WSSE there', () => {
    expect(problems({ auth_mode: 'JWT' })).toEqual([
      'signature: is required for auth_mode JWT',
      'token: is required for auth_mode JWT',
    ]);
    expect(
      problems({
        auth_mode: 'JWT',
        signature: { protocol: 'WSSE' },
        token: { signing_key: '${credentials.key}', expires_in_ms: 60_000 },
      }),
    ).toEqual(['signature.protocol: WSSE is for auth_mode SIGNATURE']);
  });

  it('needs a token URL and where the token is for TWO_STEP, a login URL for BILL, WSSE for SIGNATURE', () => {
    expect(problems({ auth_mode: 'TWO_STEP' })).toEqual([
      'token_url: is required for auth_mode TWO_STEP',
      'token_response: is required for auth_mode TWO_STEP',
    ]);
    expect(problems({ auth_mode: 'BILL' })).toEqual(['token_url: is required for auth_mode BILL']);
    expect(problems({ auth_mode: 'SIGNATURE' })).toEqual([
      'signature: must be { protocol: WSSE } for auth_mode SIGNATURE',
    ]);
    expect(problems({ auth_mode: 'SIGNATURE', signature: { protocol: 'WSSE' } })).toEqual([]);
  });
});
