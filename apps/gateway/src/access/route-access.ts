import { RouteConfig } from '@nestjs/platform-fastify';
import type { Scope } from '@switchboard/contracts';
import { PublicRoute } from '@switchboard/service-kit';

/**
 * Who may call a route: nobody in particular (`public`), a secret key with a scope, or a connect session
 * token (`session: true` as `Authorization: Bearer`, `session: 'query'` as `?connect_session_token=`).
 * `{ scope, session: true }` takes either a key with the scope or a session token. `{ public, optionalKey }`
 * (`GET /ready`) is open, and a valid secret key presented there is recognised (any scope). `console`
 * takes only a console session cookie (`/console/api/*`). Every route with a scope also takes a console
 * session cookie (no `Authorization` header), with the role's scopes in the environment it names.
 */
export type RouteAccess =
  | { public: true; optionalKey?: true }
  | { scope: Scope; session?: true }
  | { session: true | 'query' }
  | { console: true };

/** No API key needed (health, docs, logos); the same marker service-kit puts on its probes. */
export const Public = PublicRoute;

/** The one scope a key must carry for this route; routes without either decorator refuse every key. */
export const RequireScope = (scope: Scope) => RouteConfig({ access: { scope } satisfies RouteAccess });

/** Only a connect session token, as a bearer (`GET /connect/session`). */
export const RequireSession = () => RouteConfig({ access: { session: true } satisfies RouteAccess });

/** A key with this scope, or a connect session token (what the connect page reads). */
export const RequireScopeOrSession = (scope: Scope) =>
  RouteConfig({ access: { scope, session: true } satisfies RouteAccess });

/** A connect session token in `?connect_session_token=` (the auth routes `@nangohq/frontend` calls). */
export const RequireSessionQuery = () => RouteConfig({ access: { session: 'query' } satisfies RouteAccess });

/** Only a console session cookie (`/console/api/me`, sign-out, users); writes need the CSRF header. */
export const RequireConsoleSession = () => RouteConfig({ access: { console: true } satisfies RouteAccess });
