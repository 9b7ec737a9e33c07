import { z } from 'zod';
import { hostFieldProblems, originPlaceholders } from './host-fields';
import { WebhookSchema } from './webhook-schema';

/**
 * The YAML schema of the provider catalog. Field names are Nango's (so `GET /providers` stays
 * wire-compatible); the shape is our own and deliberately smaller: a field is only here once some part of
 * Switchboard reads it.
 */

export const AUTH_MODES = [
  'OAUTH2',
  'OAUTH1',
  'OAUTH2_CC',
  'API_KEY',
  'BASIC',
  'APP',
  'CUSTOM',
  'TBA',
  'NONE',
  'JWT',
  'TWO_STEP',
  'SIGNATURE',
  'BILL',
] as const;
export type AuthMode = (typeof AUTH_MODES)[number];

/** Modes that run a browser redirect and therefore need both ends of the dance. */
export const REDIRECT_AUTH_MODES: readonly AuthMode[] = ['OAUTH2', 'OAUTH1'];

/** Modes whose connect flow runs the catalog's `post_connect` calls before the connection is stored. */
export const POST_CONNECT_AUTH_MODES: readonly AuthMode[] = ['OAUTH2', 'API_KEY', 'BASIC'];

export const PROVIDER_KEY_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

const PLACEHOLDER = /\$\{([^{}]*)\}/g;
const PLACEHOLDER_NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

/**
 * Checks one URL template: `https://…` with `${name}` placeholders anywhere, or a template that starts
 * with a placeholder (the whole origin comes from connection data, e.g. Salesforce's instance URL).
 * `A || B` gives a fallback, each side checked on its own. Returns a problem, or undefined.
 */
export function urlTemplateProblem(value: string): string | undefined {
  const alternatives = value.split('||').map((part) => part.trim());
  for (const alternative of alternatives) {
    if (alternative === '') return 'empty alternative around "||"';
    if (/\s/.test(alternative)) return `"${alternative}" contains whitespace`;
    const withoutPlaceholders = alternative.replace(PLACEHOLDER, (_match, name: string) =>
      PLACEHOLDER_NAME.test(name) ? 'placeholder' : '\u0000',
    );
    if (withoutPlaceholders.includes('\u0000'))
      return `"${alternative}" has an empty or malformed \${…} placeholder`;
    if (/[${}]/.test(withoutPlaceholders)) return `"${alternative}" has an unbalanced \${…} placeholder`;
    if (alternative.startsWith('${')) continue;
    if (!alternative.startsWith('https://'))
      return `"${alternative}" must start with https:// (or a \${…} placeholder)`;
    try {
      new URL(withoutPlaceholders);
    } catch {
      return `"${alternative}" is not a valid URL`;
    }
  }
  return undefined;
}

/** Every `${connectionConfig.x}` a string refers to. */
export function connectionConfigReferences(value: string): string[] {
  const names: string[] = [];
  for (const match of value.matchAll(PLACEHOLDER)) {
    const name = match[1] ?? '';
    if (name.startsWith('connectionConfig.')) names.push(name.slice('connectionConfig.'.length));
  }
  return names;
}

const urlTemplate = z.string().superRefine((value, ctx) => {
  const problem = urlTemplateProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

const httpsUrl = z.string().superRefine((value, ctx) => {
  let ok = false;
  try {
    ok = value.startsWith('https://') && !/[\s{}]/.test(value) && new URL(value).protocol === 'https:';
  } catch {
    ok = false;
  }
  if (!ok) ctx.addIssue({ code: 'custom', message: `"${value}" must be a plain https:// URL` });
});

const nonEmpty = z.string().min(1, 'must not be empty');
const stringMap = z.record(nonEmpty, z.string());
const paramMap = z.record(nonEmpty, z.union([z.string(), z.number(), z.boolean()]));
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;
const headerMap = z.record(z.string().regex(HEADER_NAME, 'is not a valid HTTP header name'), z.string());

const regexSource = z.string().superRefine((value, ctx) => {
  try {
    new RegExp(value);
  } catch {
    ctx.addIssue({ code: 'custom', message: 'is not a valid regular expression' });
  }
});

/** The standard OAuth 2 request parameters a provider may rename (see `token_param_names`). */
export const OAUTH_PARAMS = [
  'client_id',
  'client_secret',
  'code',
  'redirect_uri',
  'grant_type',
  'refresh_token',
  'code_verifier',
  'scope',
  'state',
  'response_type',
] as const;
const oauthParamNames = z.partialRecord(
  z.enum(OAUTH_PARAMS),
  z.string().regex(/^[A-Za-z0-9_.-]+$/, 'is not a valid parameter name'),
);

/** One field of the connect form (`connection_config` or `credentials`). */
export const FormFieldSchema = z.strictObject({
  type: z.literal('string'),
  title: z.string(),
  description: z.string().optional(),
  example: z.string().optional(),
  pattern: regexSource.optional(),
  format: z.enum(['hostname', 'uri', 'uuid', 'email']).optional(),
  optional: z.boolean().optional(),
  secret: z.boolean().optional(),
  doc_section: z.string().optional(),
  prefix: z.string().optional(),
  suffix: z.string().optional(),
  enum: z.array(nonEmpty).min(1).optional(),
  default_value: z.string().optional(),
  hidden: z.boolean().optional(),
  automated: z.boolean().optional(),
  order: z.number().int().optional(),
});
export type FormField = z.infer<typeof FormFieldSchema>;

const FORM_FIELD_KEY = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
const formFields = z.record(z.string().regex(FORM_FIELD_KEY, 'is not a valid field name'), FormFieldSchema);

export const ProxyVerificationSchema = z.strictObject({
  method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD']).default('GET'),
  endpoints: z.array(nonEmpty).min(1),
  base_url_override: urlTemplate.optional(),
  headers: headerMap.optional(),
});

export const ProxyRetrySchema = z.strictObject({
  at: z.array(nonEmpty).optional(),
  after: z.array(nonEmpty).optional(),
  remaining: nonEmpty.optional(),
  error_code: z
    .array(z.string().regex(/^(?:[1-5][0-9]{2}|[1-5]xx)$/, 'must be a status code or "5xx"'))
    .optional(),
});

export const ProxyPaginateSchema = z.strictObject({
  type: z.enum(['cursor', 'link', 'offset']),
  cursor_path_in_response: nonEmpty.optional(),
  cursor_name_in_request: nonEmpty.optional(),
  limit_name_in_request: nonEmpty.optional(),
  response_path: nonEmpty.optional(),
  link_rel_in_response_header: nonEmpty.optional(),
  link_path_in_response_body: nonEmpty.optional(),
  offset_name_in_request: nonEmpty.optional(),
  offset_start_value: z.number().int().optional(),
  offset_calculation_method: z.enum(['per-page', 'by-response-size']).optional(),
});

export const ProxySchema = z.strictObject({
  base_url: urlTemplate,
  headers: headerMap.optional(),
  query: stringMap.optional(),
  /** Top-level fields the proxy sets in a JSON request body (an API key some providers want there). */
  body: stringMap.optional(),
  verification: ProxyVerificationSchema.optional(),
  retry: ProxyRetrySchema.optional(),
  paginate: ProxyPaginateSchema.optional(),
  decompress: z.boolean().optional(),
  /**
   * Every request is signed with AWS Signature Version 4 from the connection's BASIC credentials
   * (`username` = access key id, `password` = secret access key) instead of a Basic header. `region` may be
   * a template (`${connectionConfig.region}`); the signature covers the method, path, query, host,
   * `x-amz-date`, the content type and the body.
   */
  aws_sigv4: z.strictObject({ service: z.string().regex(/^[a-z0-9-]+$/), region: nonEmpty }).optional(),
});

/** A dot path into a provider's JSON answer (see valueAtPath in auth-connect). */
const ANSWER_STEP = '[A-Za-z0-9_$@-]+(?:\\[[A-Za-z0-9_$@-]+=[A-Za-z0-9_$@-]*\\])?';
const ANSWER_PATH = new RegExp(`^${ANSWER_STEP}(?:\\.${ANSWER_STEP})*$`);

/**
 * A call Switchboard makes to the provider right after the token exchange, with the new access token, to
 * learn connection data the token response does not carry (the account a webhook names, e.g. HubSpot's
 * portal). `connection_config` maps a connection-config key to a dot path in the JSON answer. These values
 * come only from the provider: the connect page cannot set them.
 */
export const PostConnectCallSchema = z.strictObject({
  method: z.enum(['GET', 'POST']).default('GET'),
  url: urlTemplate,
  headers: headerMap.optional(),
  /** A JSON body (POST), e.g. a GraphQL query. */
  body: z.string().optional(),
  /** A step may pick an array's element by one of its fields: `accounts[is_default=true].account_id`. */
  connection_config: z.record(nonEmpty, z.string().regex(ANSWER_PATH)),
});
export type PostConnectCall = z.infer<typeof PostConnectCallSchema>;

/**
 * JWT: how Switchboard mints the token it sends (`${accessToken}`), from the end user's credentials. Values
 * are templates over `${credentials.x}` and `${connectionConfig.x}`; `${credentials.x.id}` /
 * `${credentials.x.secret}` are the parts of an `id:secret` value (Ghost's admin key), `${upper(…)}` upper-cases
 * one value and `${fingerprint(credentials.x)}` is `SHA256:` + the base64 SHA-256 of the public key of a
 * PEM private key (Snowflake's key-pair issuer). A minted token is replaced when it expires.
 */
export const JwtTokenSchema = z.strictObject({
  signing_key: nonEmpty,
  /** `hex` when the key template yields hex-encoded key bytes (Ghost's secret); text otherwise. */
  signing_key_encoding: z.enum(['utf8', 'hex']).optional(),
  expires_in_ms: z.number().int().min(1_000).max(86_400_000),
  header: z.record(nonEmpty, z.string()).optional(),
  payload: z.record(nonEmpty, z.union([z.string(), z.array(z.string())])).optional(),
});
export type JwtToken = z.infer<typeof JwtTokenSchema>;

/** TWO_STEP: where the token sits in the token endpoint's JSON answer and how its expiry reads. */
export const TwoStepTokenResponseSchema = z.strictObject({
  token: nonEmpty,
  token_expiration: nonEmpty.optional(),
  /** `expireIn`: seconds from now; `expireAt`: an absolute date (ISO or epoch). */
  token_expiration_strategy: z.enum(['expireIn', 'expireAt']).optional(),
});

/** Every field an entry may carry; which ones are required depends on `auth_mode` and `alias`. */
const entryFields = {
  display_name: nonEmpty,
  categories: z.array(nonEmpty).min(1),
  docs: httpsUrl,
  docs_connect: httpsUrl.optional(),
  setup_guide_url: httpsUrl.optional(),
  auth_mode: z.enum(AUTH_MODES),
  alias: z.string().regex(PROVIDER_KEY_PATTERN, 'is not a valid provider key').optional(),

  authorization_url: urlTemplate.optional(),
  token_url: urlTemplate.optional(),
  refresh_url: urlTemplate.optional(),
  scope_separator: z.string().min(1).optional(),
  default_scopes: z.array(nonEmpty).optional(),
  authorization_params: paramMap.optional(),
  token_params: paramMap.optional(),
  refresh_params: paramMap.optional(),
  disable_pkce: z.boolean().optional(),
  token_request_auth_method: z.enum(['basic', 'custom']).optional(),
  authorization_method: z.enum(['header', 'body']).optional(),
  body_format: z.enum(['form', 'json', 'query', 'xml']).optional(),
  token_response_metadata: z.array(nonEmpty).optional(),
  redirect_uri_metadata: z.array(nonEmpty).optional(),
  alternate_access_token_response_path: nonEmpty.optional(),
  /**
   * OAuth 2 parameter names a provider spells its own way, standard name → the provider's (TikTok's
   * `client_id` → `client_key`, `code` → `auth_code`). `authorization_param_names` applies to the
   * authorization URL, `token_param_names` to every token request body (code exchange, refresh, client
   * credentials).
   */
  authorization_param_names: oauthParamNames.optional(),
  token_param_names: oauthParamNames.optional(),
  /** Dot path of the object that holds `access_token` & co. in every token answer (TikTok Business: `data`). */
  token_response_path: z
    .string()
    .regex(/^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*$/, 'must be a dot path')
    .optional(),

  /**
   * GitHub App installs (APP, CUSTOM): where the user code of this flow's own user authorization is
   * exchanged for a user token (APP: `token_url`; CUSTOM: its own `token_url`, where that token is
   * refreshed) and where that token lists the installations it can see (`installations_url`). An
   * installation is accepted only if it is in that list, never on the redirect's `installation_id` alone.
   */
  post_connect: z.array(PostConnectCallSchema).optional(),
  /**
   * Mutual TLS: the connection's credentials carry `client_certificate` and `client_private_key` (PEM),
   * presented in the TLS handshake with the token endpoint and on every proxied call (ADP).
   */
  mutual_tls: z.boolean().optional(),
  installation_check: z
    .strictObject({
      token_url: urlTemplate,
      installations_url: urlTemplate,
      /**
       * Where the user is sent after the installation for a user code bound to this flow (PKCE, state):
       * the installation redirect's own code is never exchanged for the check. APP and CUSTOM flows need it.
       */
      authorization_url: urlTemplate.optional(),
    })
    .optional(),

  /** JWT: the signing family (RSA → RS256, HMAC → HS256, EC → ES256); SIGNATURE: `WSSE`. */
  signature: z.strictObject({ protocol: z.enum(['RSA', 'HMAC', 'EC', 'WSSE']) }).optional(),
  token: JwtTokenSchema.optional(),
  /** TWO_STEP: headers of the token call; its body is `token_params` (templates over credentials too). */
  token_headers: headerMap.optional(),
  /** TWO_STEP: the token call's method (POST unless said; Tripletex creates its session with PUT). */
  token_request_method: z.enum(['GET', 'POST', 'PUT']).optional(),
  token_response: TwoStepTokenResponseSchema.optional(),
  /** TWO_STEP: lifetime when the answer carries no expiry; BILL: the session's lifetime (35 minutes by default). */
  token_expires_in_ms: z.number().int().positive().optional(),

  request_url: urlTemplate.optional(),
  signature_method: z.enum(['HMAC-SHA1', 'RSA-SHA1', 'PLAINTEXT']).optional(),

  proxy: ProxySchema.optional(),
  connection_config: formFields.optional(),
  credentials: formFields.optional(),
  // How provider webhooks are verified, answered and routed (src/webhook-schema.ts).
  webhook: WebhookSchema.optional(),
};

const ALLOWED_FIELDS = Object.keys(entryFields);

function unknownFieldMessage(keys: readonly string[]): string {
  const list = keys.map((key) => `"${key}"`).join(', ');
  return `unknown field ${list}; a provider entry may only use: ${ALLOWED_FIELDS.join(', ')}`;
}

type EntryShape = {
  auth_mode?: AuthMode | undefined;
  signature?: { protocol: string } | undefined;
  token?: unknown;
  token_response?: unknown;
  alias?: string | undefined;
  authorization_url?: string | undefined;
  token_url?: string | undefined;
  request_url?: string | undefined;
};

function checkAuthRequirements(entry: EntryShape, ctx: z.RefinementCtx): void {
  const missing = (field: keyof EntryShape, why: string): void => {
    if (entry[field] === undefined)
      ctx.addIssue({ code: 'custom', path: [field], message: `is required ${why}` });
  };
  switch (entry.auth_mode) {
    case 'OAUTH2':
      missing('authorization_url', 'for auth_mode OAUTH2');
      missing('token_url', 'for auth_mode OAUTH2');
      break;
    case 'OAUTH1':
      missing('request_url', 'for auth_mode OAUTH1');
      missing('authorization_url', 'for auth_mode OAUTH1');
      missing('token_url', 'for auth_mode OAUTH1');
      break;
    case 'OAUTH2_CC':
      missing('token_url', 'for auth_mode OAUTH2_CC');
      break;
    case 'JWT':
      missing('signature', 'for auth_mode JWT');
      missing('token', 'for auth_mode JWT');
      if (entry.signature && entry.signature.protocol === 'WSSE')
        ctx.addIssue({
          code: 'custom',
          path: ['signature', 'protocol'],
          message: 'WSSE is for auth_mode SIGNATURE',
        });
      break;
    case 'TWO_STEP':
      missing('token_url', 'for auth_mode TWO_STEP');
      missing('token_response', 'for auth_mode TWO_STEP');
      // A JWT-bearer token call (`${jwt}` in token_params) needs both the signing family and the template.
      if (
        (entry.signature === undefined) !== (entry.token === undefined) ||
        entry.signature?.protocol === 'WSSE'
      )
        ctx.addIssue({
          code: 'custom',
          path: ['signature'],
          message: 'a TWO_STEP JWT assertion needs both signature (RSA, HMAC or EC) and token',
        });
      break;
    case 'BILL':
      missing('token_url', 'for auth_mode BILL');
      break;
    case 'SIGNATURE':
      if (entry.signature?.protocol !== 'WSSE')
        ctx.addIssue({
          code: 'custom',
          path: ['signature'],
          message: 'must be { protocol: WSSE } for auth_mode SIGNATURE',
        });
      break;
    default:
      break;
  }
}

/**
 * One entry as written in a catalog file. An entry with `alias` is a partial overlay on its target, so
 * nothing is required of it until the merge; every other entry must stand on its own.
 */
export const ProviderEntrySchema = z
  .strictObject(
    Object.fromEntries(Object.entries(entryFields).map(([key, schema]) => [key, schema.optional()])) as {
      [K in keyof typeof entryFields]: z.ZodOptional<(typeof entryFields)[K]>;
    },
    {
      error: (issue) => (issue.code === 'unrecognized_keys' ? unknownFieldMessage(issue.keys) : undefined),
    },
  )
  .superRefine((entry, ctx) => {
    if (entry.alias !== undefined) return;
    for (const field of ['display_name', 'categories', 'docs', 'auth_mode'] as const) {
      if (entry[field] === undefined) ctx.addIssue({ code: 'custom', path: [field], message: 'is required' });
    }
    checkAuthRequirements(entry, ctx);
  });
export type ProviderEntry = z.infer<typeof ProviderEntrySchema>;

/** Where a `${connectionConfig.x}` may appear; each one must name a declared field or token metadata. */
function collectTemplates(entry: ProviderDefinitionShape): { path: (string | number)[]; value: string }[] {
  const out: { path: (string | number)[]; value: string }[] = [];
  const add = (path: (string | number)[], value: string | number | boolean | undefined): void => {
    if (typeof value === 'string') out.push({ path, value });
  };
  for (const field of ['authorization_url', 'token_url', 'refresh_url', 'request_url'] as const)
    add([field], entry[field]);
  for (const [key, value] of Object.entries(entry.token_headers ?? {})) add(['token_headers', key], value);
  for (const [index, call] of (entry.post_connect ?? []).entries()) {
    add(['post_connect', index, 'url'], call.url);
    for (const [key, value] of Object.entries(call.headers ?? {}))
      add(['post_connect', index, 'headers', key], value);
  }
  for (const field of ['authorization_params', 'token_params', 'refresh_params'] as const) {
    for (const [key, value] of Object.entries(entry[field] ?? {})) add([field, key], value);
  }
  if (entry.proxy) {
    add(['proxy', 'base_url'], entry.proxy.base_url);
    for (const [key, value] of Object.entries(entry.proxy.headers ?? {}))
      add(['proxy', 'headers', key], value);
    for (const [key, value] of Object.entries(entry.proxy.query ?? {})) add(['proxy', 'query', key], value);
    for (const [key, value] of Object.entries(entry.proxy.body ?? {})) add(['proxy', 'body', key], value);
    add(['proxy', 'verification', 'base_url_override'], entry.proxy.verification?.base_url_override);
    add(['proxy', 'aws_sigv4', 'region'], entry.proxy.aws_sigv4?.region);
  }
  return out;
}

type ProviderDefinitionShape = z.infer<typeof ProviderDefinitionBase>;

/**
 * Connection-config keys whose value the provider vouches for: returned by its token endpoint or a
 * post-connect call, filled by Switchboard itself (`automated`), or naming the host the token was obtained
 * from (a token from `acme.myshopify.com` proves the shop is `acme`).
 */
export function providerFilledKeys(entry: {
  token_response_metadata?: string[] | undefined;
  post_connect?: { connection_config: Record<string, string> }[] | undefined;
  connection_config?: Record<string, { automated?: boolean | undefined }> | undefined;
  token_url?: string | undefined;
}): Set<string> {
  const keys = new Set<string>(entry.token_response_metadata ?? []);
  for (const call of entry.post_connect ?? [])
    for (const key of Object.keys(call.connection_config)) keys.add(key);
  for (const [name, field] of Object.entries(entry.connection_config ?? {}))
    if (field.automated) keys.add(name);
  if (entry.token_url) for (const name of originPlaceholders(entry.token_url)) keys.add(name);
  return keys;
}

const ProviderDefinitionBase = z.strictObject(entryFields, {
  error: (issue) => (issue.code === 'unrecognized_keys' ? unknownFieldMessage(issue.keys) : undefined),
});

/** A complete provider (after any alias merge): what the rest of Switchboard reads. */
export const ProviderDefinitionSchema = ProviderDefinitionBase.superRefine((entry, ctx) => {
  checkAuthRequirements(entry, ctx);
  // Post-connect calls are made with the token an OAuth 2 code exchange returns or with the API key / basic
  // pair an end user typed, and nowhere else: on any other mode the keys they name would never be filled,
  // and routing on them would route nothing.
  if (entry.post_connect && !POST_CONNECT_AUTH_MODES.includes(entry.auth_mode)) {
    ctx.addIssue({
      code: 'custom',
      path: ['post_connect'],
      message: `runs after an OAuth 2 token exchange or an API key / basic connect only, not for auth_mode ${entry.auth_mode}`,
    });
  }
  if (entry.auth_mode === 'APP' && !entry.installation_check) {
    ctx.addIssue({
      code: 'custom',
      path: ['installation_check'],
      message:
        'is required for auth_mode APP: an installation is only accepted when the installing user can see it',
    });
  }
  const declared = new Set([
    ...Object.keys(entry.connection_config ?? {}),
    ...(entry.token_response_metadata ?? []),
    ...(entry.redirect_uri_metadata ?? []),
  ]);
  for (const { path, value } of collectTemplates(entry)) {
    for (const name of connectionConfigReferences(value)) {
      if (!declared.has(name)) {
        ctx.addIssue({
          code: 'custom',
          path,
          message: `uses \${connectionConfig.${name}} but "${name}" is not declared in connection_config (nor in token_response_metadata / redirect_uri_metadata)`,
        });
      }
    }
  }
  for (const [index, rule] of (entry.webhook?.routing ?? []).entries()) {
    const key = rule.match.startsWith('connection_config.')
      ? rule.match.slice('connection_config.'.length)
      : undefined;
    if (key === undefined || providerFilledKeys(entry).has(key)) continue;
    ctx.addIssue({
      code: 'custom',
      path: ['webhook', 'routing', index, 'match'],
      message: `routes on connection_config.${key}, which the end user could set: a routing key must come from the provider (token_response_metadata, post_connect, an automated field, or the token URL's host)`,
    });
  }
  for (const [name, problem] of hostFieldProblems(entry)) {
    ctx.addIssue({ code: 'custom', path: ['connection_config', name], message: problem });
  }
});
export type ProviderDefinition = z.infer<typeof ProviderDefinitionSchema>;

/** A catalog file: provider key → entry. The built-in catalog and an operator's overrides share it. */
export const ProviderCatalogFileSchema = z.record(
  z.string().regex(PROVIDER_KEY_PATTERN, 'provider keys are lowercase words joined by "-"'),
  ProviderEntrySchema,
);
export type ProviderCatalogFile = z.infer<typeof ProviderCatalogFileSchema>;
