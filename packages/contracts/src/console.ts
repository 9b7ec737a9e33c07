import { z } from 'zod';
import { natsRequest, successReplySchema } from './nats-request';
import { CONSOLE_ROLES } from './scopes';

/**
 * Console users and their signed-in browsers. auth-connect owns both; the gateway hands it what a browser
 * sent (the SHA-256 of the cookie, never the cookie itself) and serves `/console/api/*`.
 */
export const CONSOLE_SUBJECTS = {
  signIn: 'auth.v1.console.sign-in',
  verify: 'auth.v1.console.session.verify',
  signOut: 'auth.v1.console.sign-out',
  listUsers: 'auth.v1.console.users.list',
  createUser: 'auth.v1.console.users.create',
  updateUser: 'auth.v1.console.users.update',
  deleteUser: 'auth.v1.console.users.delete',
  audit: 'auth.v1.console.audit.record',
  listAudit: 'auth.v1.console.audit.list',
} as const;

/** The console's session cookie. */
export const CONSOLE_COOKIE = 'switchboard_console';

export const consoleRoleSchema = z.enum(CONSOLE_ROLES);

/** A SHA-256 in hex: how a console session's cookie value travels and is stored. */
const tokenHashSchema = z.string().regex(/^[0-9a-f]{64}$/);

/** Lowercased and trimmed before anything compares or stores it. */
export const consoleEmailSchema = z
  .string()
  .trim()
  .max(254)
  .pipe(z.email())
  .transform((email) => email.toLowerCase());

/** The password's policy (length, not the email) is applied by auth-connect, which knows the email. */
export const consolePasswordSchema = z.string().min(1).max(1024);

export const consoleSignInBodySchema = z
  .object({ email: z.string().max(1024), password: z.string().max(1024) })
  .strict()
  .meta({ id: 'ConsoleSignInBody' });
export type ConsoleSignInBody = z.infer<typeof consoleSignInBodySchema>;

export const consoleUserSchema = z
  .object({
    id: z.string().uuid(),
    email: z.string(),
    role: consoleRoleSchema,
    created_at: z.string(),
    last_sign_in_at: z.string().nullable(),
  })
  .meta({ id: 'ConsoleUser' });
export type ConsoleUser = z.infer<typeof consoleUserSchema>;

export const consoleEnvironmentSchema = z.object({
  id: z.number().int(),
  uuid: z.string().uuid(),
  name: z.string(),
});
export type ConsoleEnvironment = z.infer<typeof consoleEnvironmentSchema>;

/** A signed-in user as the gateway sees it on every request. */
export const verifiedConsoleSessionSchema = z.object({
  sessionId: z.number().int(),
  accountId: z.number().int(),
  user: z.object({ id: z.string().uuid(), email: z.string(), role: consoleRoleSchema }),
  environments: z.array(consoleEnvironmentSchema),
  /** Epoch ms: the session's absolute end (the cookie's Max-Age is counted to it). */
  expiresAt: z.number().int(),
});
export type VerifiedConsoleSession = z.infer<typeof verifiedConsoleSessionSchema>;

/** `tokenHash` is of a cookie value the gateway drew; auth-connect stores only the hash. */
export const consoleSignInRequestSchema = z.object({
  email: z.string().max(1024),
  password: z.string().max(1024),
  tokenHash: tokenHashSchema,
});
export const consoleVerifyRequestSchema = z.object({ tokenHash: tokenHashSchema });
export const consoleSignOutRequestSchema = z.object({ tokenHash: tokenHashSchema });

/** Who is acting on console users: only an admin of the account may. */
export const consoleActorSchema = z.object({
  accountId: z.number().int(),
  userId: z.string().uuid(),
  role: consoleRoleSchema,
});
export type ConsoleActor = z.infer<typeof consoleActorSchema>;

export const createConsoleUserBodySchema = z
  .object({ email: consoleEmailSchema, role: consoleRoleSchema, password: consolePasswordSchema })
  .strict()
  .meta({ id: 'CreateConsoleUserBody' });
export type CreateConsoleUserBody = z.infer<typeof createConsoleUserBodySchema>;

export const updateConsoleUserBodySchema = z
  .object({ role: consoleRoleSchema })
  .strict()
  .meta({ id: 'UpdateConsoleUserBody' });

export const consoleUserIdParamsSchema = z.object({ id: z.string().uuid() });

export const listConsoleUsersRequestSchema = z.object({ actor: consoleActorSchema });
export const createConsoleUserRequestSchema = z.object({
  actor: consoleActorSchema,
  body: createConsoleUserBodySchema,
});
export const updateConsoleUserRequestSchema = z.object({
  actor: consoleActorSchema,
  id: z.string().uuid(),
  body: updateConsoleUserBodySchema,
});
export const deleteConsoleUserRequestSchema = z.object({ actor: consoleActorSchema, id: z.string().uuid() });

/**
 * What the audit log records: credentials read through the console (in an environment), and the account's
 * own events (sign-ins, console users created, their role changed, deleted), which name no environment.
 */
export const CONSOLE_AUDIT_ACTIONS = [
  'connection.read_credentials',
  'integration.read_credentials',
  'console.sign_in',
  'console.user_created',
  'console.role_changed',
  'console.user_deleted',
] as const;
export const consoleAuditActionSchema = z.enum(CONSOLE_AUDIT_ACTIONS);
export type ConsoleAuditAction = z.infer<typeof consoleAuditActionSchema>;

/** A credentials read through the console: recorded before the credentials are fetched. */
export const consoleAuditRequestSchema = z.object({
  accountId: z.number().int(),
  environmentId: z.number().int(),
  userId: z.string().uuid(),
  action: z.enum(['connection.read_credentials', 'integration.read_credentials']),
  target: z.record(z.string(), z.string()),
});
export type ConsoleAuditRequest = z.infer<typeof consoleAuditRequestSchema>;

/** `GET /console/api/audit`: newest first, by `next_cursor`; admins only. */
export const consoleAuditQuerySchema = z
  .object({
    limit: z.coerce.number().int().min(1).max(100).default(50),
    cursor: z
      .string()
      .regex(/^[1-9][0-9]{0,9}$/, 'cursor must be the next_cursor of a previous page')
      .optional(),
    action: consoleAuditActionSchema.optional(),
  })
  .strict()
  .meta({ id: 'ConsoleAuditQuery' });
export type ConsoleAuditQuery = z.infer<typeof consoleAuditQuerySchema>;

export const consoleAuditEventSchema = z
  .object({
    id: z.number().int(),
    action: consoleAuditActionSchema,
    user_id: z.string().uuid(),
    user_email: z.string(),
    /** The environment's name; null for the account's own events (sign-ins, users, roles). */
    environment: z.string().nullable(),
    target: z.record(z.string(), z.string()),
    created_at: z.string(),
  })
  .meta({ id: 'ConsoleAuditEvent' });
export type ConsoleAuditEvent = z.infer<typeof consoleAuditEventSchema>;

export const consoleAuditPageSchema = z
  .object({ data: z.array(consoleAuditEventSchema), next_cursor: z.string().nullable() })
  .meta({ id: 'ConsoleAuditPage' });
export type ConsoleAuditPage = z.infer<typeof consoleAuditPageSchema>;

export const listConsoleAuditRequestSchema = z.object({
  actor: consoleActorSchema,
  query: consoleAuditQuerySchema,
});

/** What sign-in and `GET /console/api/me` answer: who is signed in and what the console may offer them. */
export const consoleMeSchema = z
  .object({
    user: z.object({ id: z.string().uuid(), email: z.string(), role: consoleRoleSchema }),
    /** Send it as `X-CSRF-Token` on every write; the same for the session's life. */
    csrf_token: z.string(),
    environments: z.array(z.object({ name: z.string() })),
    scopes: z.array(z.string()),
  })
  .meta({ id: 'ConsoleMe' });
export type ConsoleMe = z.infer<typeof consoleMeSchema>;

/** Sign-in with the installation's OIDC provider (optional; `feature_disabled` when not configured). */
export const CONSOLE_OIDC_SUBJECTS = {
  start: 'auth.v1.console.oidc.start',
  finish: 'auth.v1.console.oidc.finish',
  /** What the sign-in page may offer: whether a provider is configured, and its button's words. */
  config: 'auth.v1.console.oidc.config',
} as const;

/** `GET /console/api/config`: public, read before anyone signs in; nothing secret in it. */
export const consoleConfigSchema = z
  .object({ oidc: z.object({ enabled: z.boolean(), label: z.string() }) })
  .meta({ id: 'ConsoleConfig' });
export type ConsoleConfig = z.infer<typeof consoleConfigSchema>;
export const consoleConfigRequestSchema = z.object({});

/** The gateway draws state, nonce and PKCE verifier and keeps them in the browser's cookie. */
export const consoleOidcStartRequestSchema = z.object({
  redirectUri: z.url(),
  state: z.string().min(32).max(128),
  nonce: z.string().min(32).max(128),
  codeChallenge: z.string().min(43).max(128),
});
export const consoleOidcStartReplySchema = z.object({ url: z.string() });

/** `callbackUrl`: the callback as the browser requested it (its path is the redirect URI). */
export const consoleOidcFinishRequestSchema = z.object({
  callbackUrl: z.url(),
  state: z.string().min(32).max(128),
  nonce: z.string().min(32).max(128),
  codeVerifier: z.string().min(43).max(128),
  tokenHash: tokenHashSchema,
});

/** The console's sign-in and users (auth-connect answers). */
export const CONSOLE_REQUESTS = {
  signIn: natsRequest({
    subject: CONSOLE_SUBJECTS.signIn,
    request: consoleSignInRequestSchema,
    reply: verifiedConsoleSessionSchema,
  }),
  verify: natsRequest({
    subject: CONSOLE_SUBJECTS.verify,
    request: consoleVerifyRequestSchema,
    reply: verifiedConsoleSessionSchema,
  }),
  signOut: natsRequest({
    subject: CONSOLE_SUBJECTS.signOut,
    request: consoleSignOutRequestSchema,
    reply: successReplySchema,
  }),
  listUsers: natsRequest({
    subject: CONSOLE_SUBJECTS.listUsers,
    request: listConsoleUsersRequestSchema,
    reply: z.object({ users: z.array(consoleUserSchema) }),
  }),
  createUser: natsRequest({
    subject: CONSOLE_SUBJECTS.createUser,
    request: createConsoleUserRequestSchema,
    reply: consoleUserSchema,
  }),
  updateUser: natsRequest({
    subject: CONSOLE_SUBJECTS.updateUser,
    request: updateConsoleUserRequestSchema,
    reply: consoleUserSchema,
  }),
  deleteUser: natsRequest({
    subject: CONSOLE_SUBJECTS.deleteUser,
    request: deleteConsoleUserRequestSchema,
    reply: consoleUserSchema,
  }),
  audit: natsRequest({
    subject: CONSOLE_SUBJECTS.audit,
    request: consoleAuditRequestSchema,
    reply: successReplySchema,
  }),
  listAudit: natsRequest({
    subject: CONSOLE_SUBJECTS.listAudit,
    request: listConsoleAuditRequestSchema,
    reply: consoleAuditPageSchema,
  }),
};

/** The console's single sign-on (auth-connect answers). */
export const CONSOLE_OIDC_REQUESTS = {
  start: natsRequest({
    subject: CONSOLE_OIDC_SUBJECTS.start,
    request: consoleOidcStartRequestSchema,
    reply: consoleOidcStartReplySchema,
  }),
  finish: natsRequest({
    subject: CONSOLE_OIDC_SUBJECTS.finish,
    request: consoleOidcFinishRequestSchema,
    reply: verifiedConsoleSessionSchema,
  }),
  config: natsRequest({
    subject: CONSOLE_OIDC_SUBJECTS.config,
    request: consoleConfigRequestSchema,
    reply: consoleConfigSchema,
  }),
};
