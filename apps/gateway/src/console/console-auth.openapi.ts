import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import {
  CONSOLE_COOKIE,
  consoleAuditPageSchema,
  consoleAuditQuerySchema,
  consoleConfigSchema,
  consoleMeSchema,
  consoleSignInBodySchema,
  consoleUserSchema,
  createConsoleUserBodySchema,
  errorBodySchema,
  updateConsoleUserBodySchema,
} from '@switchboard/contracts';
import { z } from 'zod';
import { json } from '../openapi/documented-route';

const error = (description: string) => ({ description, ...json(errorBodySchema) });
const idParams = z.object({ id: z.string().uuid() });
const csrfHeader = z.object({ 'x-csrf-token': z.string() });
const SESSION = [{ consoleSession: [] }];
const refused = {
  401: error('No console session, or it has ended (`console_session_required`)'),
  403: error('Not an admin (`forbidden`), or a write without the CSRF token (`csrf_token_invalid`)'),
};

/** `/console/api/*`: the console's own routes, authenticated by its session cookie rather than a key. */
export function registerConsolePaths(registry: OpenAPIRegistry): void {
  registry.registerComponent('securitySchemes', 'consoleSession', {
    type: 'apiKey',
    in: 'cookie',
    name: CONSOLE_COOKIE,
    description:
      'The console session cookie set by sign-in (HttpOnly, Secure, SameSite=Strict). Writes also need the ' +
      "session's `X-CSRF-Token`; API routes name the environment in `X-Switchboard-Environment`.",
  });
  registerSignInPaths(registry);
  registerAdminPaths(registry);
}

/** Sign-in (password or OIDC), the signed-in user and sign-out. */
function registerSignInPaths(registry: OpenAPIRegistry): void {
  registry.registerPath({
    method: 'get',
    path: '/console/api/config',
    summary: 'What the sign-in page offers: whether OIDC sign-in is configured, and its button label',
    responses: { 200: { description: 'The public console settings', ...json(consoleConfigSchema) } },
  });
  registry.registerPath({
    method: 'post',
    path: '/console/api/sign-in',
    summary: 'Sign a person in to the console (a new session every time; throttled per address and email)',
    request: { body: json(consoleSignInBodySchema) },
    responses: {
      200: {
        description: 'Signed in; `Set-Cookie: switchboard_console=…` carries the session',
        ...json(consoleMeSchema),
      },
      400: error('Invalid body (`invalid_body`)'),
      401: error('Wrong email or password (`invalid_credentials`)'),
      403: error('Sent from another origin (`csrf_token_invalid`)'),
      429: error('Too many attempts (`too_many_request`); see Retry-After'),
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/console/api/oidc/start',
    summary: "Sign in with the installation's OpenID Connect provider: a redirect to it",
    responses: {
      302: { description: 'To the provider; the attempt is bound to this browser by a cookie' },
      404: error('No provider is configured (`feature_disabled`)'),
      429: error('Too many attempts (`too_many_request`)'),
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/console/api/oidc/callback',
    summary: "The provider's answer: a new console session, then a redirect to /console",
    request: { query: z.object({ code: z.string(), state: z.string() }) },
    responses: {
      302: { description: 'Signed in; `Set-Cookie: switchboard_console=…`' },
      400: error('Not started in this browser, or expired (`invalid_query_params`)'),
      401: error('No verified email of an existing console user (`invalid_credentials`)'),
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/console/api/me',
    summary: 'The signed-in user, their environments and scopes, and the CSRF token',
    security: SESSION,
    responses: { 200: { description: 'The session', ...json(consoleMeSchema) }, 401: refused[401] },
  });
  registry.registerPath({
    method: 'post',
    path: '/console/api/sign-out',
    summary: 'End the session and clear the cookie',
    security: SESSION,
    request: { headers: csrfHeader },
    responses: { 204: { description: 'Signed out' }, ...refused },
  });
}

/** The account's console users and its audit log (admin only). */
function registerAdminPaths(registry: OpenAPIRegistry): void {
  registry.registerPath({
    method: 'get',
    path: '/console/api/users',
    summary: "The account's console users (admin only)",
    security: SESSION,
    responses: {
      200: { description: 'Users', ...json(z.object({ users: z.array(consoleUserSchema) })) },
      ...refused,
    },
  });
  registry.registerPath({
    method: 'post',
    path: '/console/api/users',
    summary: 'Create a console user (admin only; password of 12+ characters, not the email)',
    security: SESSION,
    request: { headers: csrfHeader, body: json(createConsoleUserBodySchema) },
    responses: {
      201: { description: 'The user', ...json(consoleUserSchema) },
      400: error('Invalid body or weak password (`invalid_body`)'),
      409: error('The email is taken (`conflict`)'),
      ...refused,
    },
  });
  registry.registerPath({
    method: 'patch',
    path: '/console/api/users/{id}',
    summary: "Change a user's role (admin only); their sessions end",
    security: SESSION,
    request: { params: idParams, headers: csrfHeader, body: json(updateConsoleUserBodySchema) },
    responses: {
      200: { description: 'The user', ...json(consoleUserSchema) },
      404: error('No such user (`not_found`)'),
      409: error("The account's last admin (`conflict`)"),
      ...refused,
    },
  });
  registry.registerPath({
    method: 'delete',
    path: '/console/api/users/{id}',
    summary: 'Delete a user (admin only); their sessions end',
    security: SESSION,
    request: { params: idParams, headers: csrfHeader },
    responses: {
      200: { description: 'The deleted user', ...json(consoleUserSchema) },
      404: error('No such user (`not_found`)'),
      409: error("The account's last admin (`conflict`)"),
      ...refused,
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/console/api/audit',
    summary:
      "The account's audit log, newest first: credentials reads, sign-ins, console users' changes (admin only)",
    security: SESSION,
    request: { query: consoleAuditQuerySchema },
    responses: {
      200: { description: 'A page of events; `next_cursor` reads the next', ...json(consoleAuditPageSchema) },
      400: error('Invalid query (`invalid_query_params`)'),
      ...refused,
    },
  });
}
