import { z } from 'zod';
import { natsRequest, successReplySchema } from './nats-request';
import { callerSchema } from './context';
import { endUserSchema } from './events';
import { uniqueKeySchema } from './integrations';

/**
 * Connect sessions (a short-lived token a customer's backend hands to its end user's browser) and the
 * auth flows that token unlocks. Wire shapes follow Nango's (`POST /connect/sessions`, the connect UI
 * routes), so `@nangohq/node` and `@nangohq/frontend` work unchanged.
 */

export const CONNECT_SESSION_TOKEN_PREFIX = 'nango_connect_session_';
/** 32 random bytes as lowercase hex after the prefix. */
export const CONNECT_SESSION_TOKEN_PATTERN = /^nango_connect_session_[0-9a-f]{64}$/;
export const CONNECT_SESSION_TTL_MS = 30 * 60 * 1000;

export const CONNECT_TAG_MAX_COUNT = 10;
const TAG_KEY = /^[a-zA-Z][a-zA-Z0-9_\-./]*$/;

const tagKeySchema = z
  .string()
  .max(64, 'Tag keys must be at most 64 characters')
  .regex(TAG_KEY, 'Tag keys must start with a letter and hold only letters, digits, _ - . /');

/** Connection tags as a session takes them: keys lower-cased, at most 10, values 1..255 characters. */
export const connectTagsSchema = z
  .record(tagKeySchema, z.string().min(1).max(255))
  .superRefine((tags, ctx) => {
    const keys = Object.keys(tags);
    if (keys.length > CONNECT_TAG_MAX_COUNT) {
      ctx.addIssue({
        code: 'custom',
        message: `Tags cannot contain more than ${CONNECT_TAG_MAX_COUNT} keys`,
      });
      return;
    }
    const seen = new Set<string>();
    for (const key of keys) {
      const lower = key.toLowerCase();
      if (seen.has(lower)) {
        ctx.addIssue({
          code: 'custom',
          message: `Duplicate tag key after lower-casing: "${lower}"`,
          path: [key],
        });
      }
      seen.add(lower);
      if (lower === 'end_user_email' && !z.email().safeParse(tags[key]).success) {
        ctx.addIssue({
          code: 'custom',
          message: 'Tag "end_user_email" must be an email address',
          path: [key],
        });
      }
    }
  })
  .transform((tags) => Object.fromEntries(Object.entries(tags).map(([k, v]) => [k.toLowerCase(), v])));

/** `end_user.tags` are folded into the session's tags best-effort (Nango drops them when over the cap). */
const endUserTagsSchema = z.record(tagKeySchema, z.string().max(255));

export const connectEndUserInputSchema = z.strictObject({
  id: z.string().min(1).max(255),
  email: z.email().min(5).optional(),
  display_name: z.string().max(255).optional(),
  tags: endUserTagsSchema.optional(),
});
export type ConnectEndUserInput = z.infer<typeof connectEndUserInputSchema>;

export const connectOrganizationInputSchema = z.strictObject({
  id: z.string().max(255),
  display_name: z.string().max(255).optional(),
});

/** A browser opens these links: only http(s), never `javascript:` or `data:`. */
const httpUrlSchema = z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).max(2048);

export const connectIntegrationDefaultsSchema = z.strictObject({
  user_scopes: z.string().max(4096).optional(),
  authorization_params: z.record(z.string().max(255), z.string().max(4096)).optional(),
  /**
   * Merged into the connection config of the flow (the session wins over what the page sends).
   * An empty `oauth_client_id_override` / `oauth_client_secret_override` makes the page ask the end user
   * for their own OAuth app.
   */
  connection_config: z
    .looseObject({
      oauth_scopes_override: z.string().max(4096).optional(),
      oauth_client_id_override: z.string().max(1024).optional(),
      oauth_client_secret_override: z.string().max(4096).optional(),
    })
    .optional(),
});
export type ConnectIntegrationDefaults = z.infer<typeof connectIntegrationDefaultsSchema>;

export const connectOverridesSchema = z.record(
  uniqueKeySchema,
  z.strictObject({ docs_connect: httpUrlSchema.optional() }),
);

const sessionFields = {
  end_user: connectEndUserInputSchema.optional(),
  /** Deprecated in favour of `tags`; still folded into them. */
  organization: connectOrganizationInputSchema.optional(),
  integrations_config_defaults: z.record(uniqueKeySchema, connectIntegrationDefaultsSchema).optional(),
  overrides: connectOverridesSchema.optional(),
  /** Where this session's connection sends its webhooks instead of the environment's URLs; '' = none. */
  webhook_url_override: z.union([httpUrlSchema, z.literal('')]).optional(),
  tags: connectTagsSchema.optional(),
};

export const createConnectSessionBodySchema = z
  .strictObject({ ...sessionFields, allowed_integrations: z.array(uniqueKeySchema).max(1000).optional() })
  .superRefine((body, ctx) => {
    if (!body.end_user && !body.tags) {
      ctx.addIssue({
        code: 'custom',
        message: 'end_user is required unless tags are provided',
        path: ['end_user'],
      });
    }
  });
export type CreateConnectSessionBody = z.infer<typeof createConnectSessionBodySchema>;

export const reconnectConnectSessionBodySchema = z.strictObject({
  ...sessionFields,
  connection_id: z.string().min(1).max(255),
  integration_id: uniqueKeySchema,
});
export type ReconnectConnectSessionBody = z.infer<typeof reconnectConnectSessionBodySchema>;

export const connectSessionCreatedSchema = z
  .object({ token: z.string(), connect_link: z.string(), expires_at: z.string() })
  .meta({ id: 'ConnectSessionCreated' });
export type ConnectSessionCreated = z.infer<typeof connectSessionCreatedSchema>;

export const connectUiSettingsSchema = z.object({
  theme: z.object({ light: z.object({ primary: z.string() }), dark: z.object({ primary: z.string() }) }),
  defaultTheme: z.enum(['light', 'dark', 'system']),
  showWatermark: z.boolean(),
});

/** `GET /connect/session` data. camelCase `endUser` / `isReconnecting` as Nango sends them. */
export const connectSessionViewSchema = z.object({
  endUser: endUserSchema.nullable(),
  connectUISettings: connectUiSettingsSchema,
  allowed_integrations: z.array(z.string()).optional(),
  integrations_config_defaults: z
    .record(
      z.string(),
      z.object({
        connection_config: z.record(z.string(), z.unknown()).optional(),
        authorization_params: z.record(z.string(), z.string()).optional(),
      }),
    )
    .optional(),
  isReconnecting: z.literal(true).optional(),
  overrides: connectOverridesSchema.optional(),
});
export type ConnectSessionView = z.infer<typeof connectSessionViewSchema>;

export const CONNECT_SESSION_SUBJECTS = {
  create: 'auth.v1.connect-session.create',
  reconnect: 'auth.v1.connect-session.reconnect',
  /** gateway → auth-connect: the SHA-256 of a presented session token → its session and environment. */
  verify: 'auth.v1.connect-session.verify',
  get: 'auth.v1.connect-session.get',
  delete: 'auth.v1.connect-session.delete',
} as const;

export const createConnectSessionRequestSchema = z.object({
  caller: callerSchema,
  body: createConnectSessionBodySchema,
});
export const reconnectConnectSessionRequestSchema = z.object({
  caller: callerSchema,
  body: reconnectConnectSessionBodySchema,
});
export const verifyConnectSessionRequestSchema = z.object({ tokenHash: z.string().regex(/^[0-9a-f]{64}$/) });
export const verifiedConnectSessionSchema = z.object({
  sessionId: z.number().int(),
  caller: callerSchema,
  /** null = every integration of the environment. */
  allowedIntegrations: z.array(z.string()).nullable(),
  expiresAt: z.string(),
});
export type VerifiedConnectSession = z.infer<typeof verifiedConnectSessionSchema>;
export const connectSessionRefSchema = z.object({ caller: callerSchema, sessionId: z.number().int() });

// ---- Auth flows --------------------------------------------------------------------------------

export const CONNECT_FLOW_SUBJECTS = {
  /** Start a redirect flow (OAUTH2, OAUTH1, APP, CUSTOM): returns the provider URL to send the browser to. */
  start: 'auth.v1.flow.start',
  /**
   * Bind a started flow to the browser that opens it (the connect page's POST start returns a gateway
   * launch URL; the browser opening it gets the nonce cookie): returns the provider URL.
   */
  bind: 'auth.v1.flow.bind',
  /** The provider redirected back to `/oauth/callback` (or the GitHub App setup URL). */
  callback: 'auth.v1.flow.callback',
  /** A form flow (API_KEY, BASIC, OAUTH2_CC, TBA, JWT, TWO_STEP, BILL, SIGNATURE): credentials in, connection out. */
  submit: 'auth.v1.flow.submit',
} as const;

/** Connection config values the page asks for (`params[subdomain]=…`); never credentials. */
const flowParamsSchema = z.record(z.string().min(1).max(255), z.string().max(2048));

/** Query of `GET /oauth/connect/{key}` as `@nangohq/frontend` sends it (`params[k]=v` parsed by qs). */
export const oauthConnectQuerySchema = z.strictObject({
  connect_session_token: z.string(),
  /** The `@nangohq/frontend` WebSocket this flow reports to (its `connection_ack`); see OAUTH_SOCKET_SUBJECTS. */
  ws_client_id: z.uuid().optional(),
  user_scope: z.string().max(4096).optional(),
  params: flowParamsSchema.optional(),
  authorization_params: z.record(z.string().max(255), z.string().max(4096)).optional(),
  credentials: z.strictObject({ oauth_client_id_override: z.string().max(1024).optional() }).optional(),
});

/** Body of `POST /oauth/connect/{key}`: the same inputs, but a client secret typed by the end user stays out of URLs. */
export const oauthConnectBodySchema = z.strictObject({
  params: flowParamsSchema.optional(),
  authorization_params: z.record(z.string().max(255), z.string().max(4096)).optional(),
  user_scope: z.string().max(4096).optional(),
  credentials: z
    .strictObject({
      oauth_client_id_override: z.string().max(1024).optional(),
      oauth_client_secret_override: z.string().max(4096).optional(),
    })
    .optional(),
});

/** Query shared by the POST form flows. */
export const flowSubmitQuerySchema = z.strictObject({
  connect_session_token: z.string(),
  params: flowParamsSchema.optional(),
  connection_id: z.string().optional(),
});

export const apiKeyFlowBodySchema = z.strictObject({ apiKey: z.string().min(1).max(8192) });
export const basicFlowBodySchema = z.strictObject({
  username: z.string().min(1).max(1024),
  password: z.string().max(8192).default(''),
});
export const clientCredentialsFlowBodySchema = z.strictObject({
  client_id: z.string().min(1).max(1024),
  client_secret: z.string().max(8192).optional(),
  client_certificate: z.string().max(16384).optional(),
  client_private_key: z.string().max(16384).optional(),
});
export const tbaFlowBodySchema = z.strictObject({
  token_id: z.string().min(1).max(1024),
  token_secret: z.string().min(1).max(4096),
  oauth_client_id_override: z.string().max(1024).optional(),
  oauth_client_secret_override: z.string().max(4096).optional(),
});

/**
 * JWT and TWO_STEP: the provider's own credential fields (its catalog `credentials` form), e.g. Snowflake's
 * `accountIdentifier`, `userName`, `privateKey`. A `type` naming the mode is accepted and ignored.
 */
export const credentialFieldsFlowBodySchema = z
  .record(z.string().min(1).max(255), z.string().max(16_384))
  .refine((body) => Object.keys(body).length <= 50, 'at most 50 fields');
export const billFlowBodySchema = z.strictObject({
  username: z.string().min(1).max(1024),
  password: z.string().min(1).max(8192),
  organization_id: z.string().min(1).max(255),
  dev_key: z.string().min(1).max(1024),
});
export const signatureFlowBodySchema = z.strictObject({
  type: z.literal('SIGNATURE').optional(),
  username: z.string().min(1).max(1024),
  password: z.string().min(1).max(8192),
});

export const SUBMIT_FLOW_MODES = [
  'API_KEY',
  'BASIC',
  'OAUTH2_CC',
  'TBA',
  'JWT',
  'TWO_STEP',
  'BILL',
  'SIGNATURE',
] as const;
export type SubmitFlowMode = (typeof SUBMIT_FLOW_MODES)[number];

/** SHA-256 (base64url) of the nonce the gateway puts in the browser's cookie; only the hash leaves the gateway. */
export const browserBindingSchema = z.string().regex(/^[A-Za-z0-9_-]{43}$/);

const sessionFlowFields = {
  caller: callerSchema,
  sessionId: z.number().int(),
  providerConfigKey: z.string(),
  params: flowParamsSchema.default({}),
};

export const startFlowRequestSchema = z.object({
  ...sessionFlowFields,
  authorizationParams: z.record(z.string(), z.string()).default({}),
  userScope: z.string().optional(),
  /** Set when the browser that starts the flow is the one that goes to the provider (the popup route). */
  browserBinding: browserBindingSchema.optional(),
  /** The `@nangohq/frontend` WebSocket that hears this flow's outcome (kept with the state, sealed). */
  wsClientId: z.uuid().optional(),
  clientOverride: z
    .object({ clientId: z.string().optional(), clientSecret: z.string().optional() })
    .default({}),
});
export type StartFlowRequest = z.infer<typeof startFlowRequestSchema>;
/**
 * `state` is the OAuth state (also the key of the browser nonce cookie); `url` the provider URL, empty
 * when the flow still has to be bound to a browser (`bind`).
 */
export const startedFlowSchema = z.object({ url: z.string(), state: z.string() });
export type StartedFlow = z.infer<typeof startedFlowSchema>;

export const bindFlowRequestSchema = z.object({
  state: z.uuid(),
  browserBinding: browserBindingSchema,
});
export type BindFlowRequest = z.infer<typeof bindFlowRequestSchema>;

export const submitFlowRequestSchema = z.discriminatedUnion('mode', [
  z.object({ ...sessionFlowFields, mode: z.literal('API_KEY'), body: apiKeyFlowBodySchema }),
  z.object({ ...sessionFlowFields, mode: z.literal('BASIC'), body: basicFlowBodySchema }),
  z.object({ ...sessionFlowFields, mode: z.literal('OAUTH2_CC'), body: clientCredentialsFlowBodySchema }),
  z.object({ ...sessionFlowFields, mode: z.literal('TBA'), body: tbaFlowBodySchema }),
  z.object({ ...sessionFlowFields, mode: z.literal('JWT'), body: credentialFieldsFlowBodySchema }),
  z.object({ ...sessionFlowFields, mode: z.literal('TWO_STEP'), body: credentialFieldsFlowBodySchema }),
  z.object({ ...sessionFlowFields, mode: z.literal('BILL'), body: billFlowBodySchema }),
  z.object({ ...sessionFlowFields, mode: z.literal('SIGNATURE'), body: signatureFlowBodySchema }),
]);
export type SubmitFlowRequest = z.infer<typeof submitFlowRequestSchema>;

/** The public success body of every auth route. */
export const flowResultSchema = z.object({ connectionId: z.string(), providerConfigKey: z.string() });
export type FlowResult = z.infer<typeof flowResultSchema>;

export const callbackFlowRequestSchema = z.object({
  /** Every query parameter the provider sent back, as strings. */
  query: z.record(z.string(), z.string()),
  /** The nonce cookie the browser sent with the callback, if any; it must match the flow's binding. */
  browserNonce: z.string().max(200).optional(),
});

/**
 * The outcome of a callback, as data rather than an error: the gateway renders it as the HTML page the
 * popup (or the full-page redirect) shows. `errorType` uses `@nangohq/frontend`'s names.
 */
/** Where the gateway sends the outcome as a WebSocket frame: the socket the flow was started for, and its session. */
const outcomeNotifySchema = z.object({ wsClientId: z.uuid(), sessionId: z.number().int() });

export const callbackOutcomeSchema = z.discriminatedUnion('ok', [
  z.object({
    ok: z.literal(true),
    notify: outcomeNotifySchema.optional(),
    providerConfigKey: z.string(),
    connectionId: z.string(),
    isPending: z.boolean().default(false),
    /** The provider's name, for the result page: the session (and its integration list) has ended. */
    displayName: z.string().optional(),
  }),
  z.object({
    ok: z.literal(false),
    notify: outcomeNotifySchema.optional(),
    providerConfigKey: z.string().nullable(),
    connectionId: z.string().nullable(),
    errorType: z.string(),
    message: z.string(),
  }),
]);
export type CallbackOutcome = z.infer<typeof callbackOutcomeSchema>;

// ---- @nangohq/frontend's WebSocket (gateway ↔ gateway) -------------------------------------------

/**
 * `nango.auth()` learns a popup flow's outcome over a WebSocket to the gateway, not from the popup. The
 * socket lives on one gateway replica; the popup's start and the provider's callback may reach any other.
 * Each replica subscribes, per socket it holds, to `gateway.v1.oauth-socket.<ws_client_id>.*`:
 * `claim` (request/reply) ties the socket to the connect session of the first flow started for it, and
 * `result` (a broadcast) carries the frame to send. Core NATS: when the socket is gone nobody listens,
 * and there is nobody left to tell.
 */
export const OAUTH_SOCKET_SUBJECT_PREFIX = 'gateway.v1.oauth-socket';
export const OAUTH_SOCKET_SUBJECTS = {
  all: `${OAUTH_SOCKET_SUBJECT_PREFIX}.>`,
  /** What the replica holding the socket subscribes to. */
  socket: (wsClientId: string) => `${OAUTH_SOCKET_SUBJECT_PREFIX}.${wsClientId}.*`,
  claim: (wsClientId: string) => `${OAUTH_SOCKET_SUBJECT_PREFIX}.${wsClientId}.claim`,
  result: (wsClientId: string) => `${OAUTH_SOCKET_SUBJECT_PREFIX}.${wsClientId}.result`,
} as const;

export const oauthSocketClaimSchema = z.object({ sessionId: z.number().int() });
export type OAuthSocketClaim = z.infer<typeof oauthSocketClaimSchema>;
export const oauthSocketClaimReplySchema = z.object({ ok: z.boolean() });

/** The frames of Nango's publisher protocol, as `@nangohq/frontend` reads them. */
export const oauthSocketFrameSchema = z.discriminatedUnion('message_type', [
  z.object({
    message_type: z.literal('success'),
    provider_config_key: z.string(),
    connection_id: z.string(),
    is_pending: z.boolean(),
  }),
  z.object({
    message_type: z.literal('error'),
    provider_config_key: z.string().nullable(),
    connection_id: z.string().nullable(),
    error_type: z.string(),
    error_desc: z.string(),
  }),
]);
export type OAuthSocketFrame = z.infer<typeof oauthSocketFrameSchema>;

/** A frame for the socket, sent only when the socket was claimed by this session. */
export const oauthSocketResultSchema = z.object({
  sessionId: z.number().int(),
  frame: oauthSocketFrameSchema,
});
export type OAuthSocketResult = z.infer<typeof oauthSocketResultSchema>;

/**
 * What auth-connect answers a callback with: the outcome for the result page, or (a GitHub App install
 * coming back) the next provider URL the same browser must visit, with its binding cookie kept.
 */
export const callbackReplySchema = z.union([callbackOutcomeSchema, z.object({ continueTo: z.url() })]);
export type CallbackReply = z.infer<typeof callbackReplySchema>;

/** Connect sessions (auth-connect answers). */
export const CONNECT_SESSION_REQUESTS = {
  create: natsRequest({
    subject: CONNECT_SESSION_SUBJECTS.create,
    request: createConnectSessionRequestSchema,
    reply: connectSessionCreatedSchema,
  }),
  reconnect: natsRequest({
    subject: CONNECT_SESSION_SUBJECTS.reconnect,
    request: reconnectConnectSessionRequestSchema,
    reply: connectSessionCreatedSchema,
  }),
  verify: natsRequest({
    subject: CONNECT_SESSION_SUBJECTS.verify,
    request: verifyConnectSessionRequestSchema,
    reply: verifiedConnectSessionSchema,
  }),
  get: natsRequest({
    subject: CONNECT_SESSION_SUBJECTS.get,
    request: connectSessionRefSchema,
    reply: connectSessionViewSchema,
  }),
  delete: natsRequest({
    subject: CONNECT_SESSION_SUBJECTS.delete,
    request: connectSessionRefSchema,
    reply: successReplySchema,
  }),
};

/** The connect flows (auth-connect answers; the gateway calls them for the connect UI and the SDKs). */
export const CONNECT_FLOW_REQUESTS = {
  start: natsRequest({
    subject: CONNECT_FLOW_SUBJECTS.start,
    request: startFlowRequestSchema,
    reply: startedFlowSchema,
  }),
  bind: natsRequest({
    subject: CONNECT_FLOW_SUBJECTS.bind,
    request: bindFlowRequestSchema,
    reply: z.object({ url: z.string() }),
  }),
  callback: natsRequest({
    subject: CONNECT_FLOW_SUBJECTS.callback,
    request: callbackFlowRequestSchema,
    reply: callbackReplySchema,
  }),
  submit: natsRequest({
    subject: CONNECT_FLOW_SUBJECTS.submit,
    request: submitFlowRequestSchema,
    reply: flowResultSchema,
  }),
};
