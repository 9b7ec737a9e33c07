import { fieldErrorsFromZod, type FieldError } from '@switchboard/contracts';
import type { ResolvedProvider } from '@switchboard/providers';
import { z } from 'zod';
import { AuthConnectError } from '../auth-connect.errors';
import { connectionConfigProblems } from './connection-config';
import type { TbaCredentials } from './credentials';
import type { ConnectionConfig } from './templates';

/**
 * Token-based authentication (NetSuite TBA): the end user creates a token in the provider's UI and types
 * its id and secret; the integration holds the consumer key and secret. Nothing is exchanged with the
 * provider here: requests are signed per call (OAuth 1.0a with a realm) by whoever calls the API.
 */

/** The body of `POST /auth/tba/{key}` (Nango's field names). */
export const tbaCredentialsInputSchema = z.strictObject({
  token_id: z.string().trim().min(1).max(1024),
  token_secret: z.string().trim().min(1).max(1024),
  /** The end user's own consumer key/secret, when the session allowed them to bring one. */
  oauth_client_id_override: z.string().trim().min(1).max(1024).optional(),
  oauth_client_secret_override: z.string().trim().min(1).max(1024).optional(),
});
export type TbaCredentialsInput = z.infer<typeof tbaCredentialsInputSchema>;

/**
 * Validates what the end user sent for a TBA provider and builds the credentials to store. Problems are
 * reported together as one `invalid_body` with a path per field (`token_id`, `connection_config.accountId`,
 * ...), and no value that was typed appears in a message.
 */
export function buildTbaCredentials(
  provider: ResolvedProvider,
  body: unknown,
  connectionConfig: ConnectionConfig,
): TbaCredentials {
  const problems: FieldError[] = [];
  if (provider.auth_mode !== 'TBA') {
    throw new AuthConnectError('invalid_auth_mode', `${provider.name} does not use TBA`);
  }
  const parsed = tbaCredentialsInputSchema.safeParse(body);
  if (!parsed.success) problems.push(...fieldErrorsFromZod(parsed.error).map(withoutInput));
  problems.push(...connectionConfigProblems(provider, connectionConfig));
  // NetSuite's REST and SOAP hosts, and the realm of every signed request, are derived from the account id.
  if (provider.name.startsWith('netsuite') && !problems.some((p) => p.path[1] === 'accountId')) {
    const accountId = connectionConfig['accountId'];
    if (typeof accountId !== 'string' || accountId === '') {
      problems.push({
        code: 'missing',
        message: 'Account ID is required',
        path: ['connection_config', 'accountId'],
      });
    }
  }
  const input = parsed.success ? parsed.data : undefined;
  if (
    input &&
    (input.oauth_client_id_override === undefined) !== (input.oauth_client_secret_override === undefined)
  ) {
    problems.push({
      code: 'custom',
      message: 'oauth_client_id_override and oauth_client_secret_override go together',
      path: [
        input.oauth_client_id_override === undefined
          ? 'oauth_client_id_override'
          : 'oauth_client_secret_override',
      ],
    });
  }
  if (problems.length > 0 || !input) {
    throw new AuthConnectError('invalid_body', 'Invalid TBA credentials', problems);
  }
  return {
    type: 'TBA',
    token_id: input.token_id,
    token_secret: input.token_secret,
    ...(input.oauth_client_id_override && input.oauth_client_secret_override
      ? {
          config_override: {
            client_id: input.oauth_client_id_override,
            client_secret: input.oauth_client_secret_override,
          },
        }
      : {}),
  };
}

// zod messages may quote the received value; a typed secret must not come back in an error body.
function withoutInput(problem: FieldError): FieldError {
  return { ...problem, message: problem.message.replace(/received .*/i, 'received an invalid value') };
}
