import type { ErrorCode } from '@switchboard/contracts';
import { AuthConnectError } from '../auth-connect.errors';

/** Which call to a provider failed; callers map it to their own wording (e.g. the connect page's `token_err`). */
export const EXCHANGE_STAGES = [
  'authorization_code',
  'refresh',
  'client_credentials',
  'oauth1_request_token',
  'oauth1_access_token',
  'app_installation_token',
  'app_installation_check',
  'post_connect',
  'two_step_token',
  'bill_login',
  'jwt_signing',
] as const;
export type ExchangeStage = (typeof EXCHANGE_STAGES)[number];

/** Why it failed: the provider said no, or we could not get a usable answer from it. */
export type ExchangeFailure = 'rejected' | 'unreachable' | 'invalid_response' | 'misconfigured';

export interface ProviderExchangeErrorDetails {
  stage: ExchangeStage;
  failure: ExchangeFailure;
  provider: string;
  /** The provider's HTTP status, when it answered. */
  providerStatus?: number;
  /** The provider's OAuth `error` code (e.g. `invalid_grant`), when it sent one. */
  providerError?: string;
}

/**
 * A failed call to a provider. The wire code follows Nango: every refresh failure is
 * `refresh_token_external_error`; at connect time a refusal is `invalid_credentials` and an unusable
 * answer is `bad_gateway`. The message is built only from redacted text, so it can travel to the public
 * error body, the connection's error and the auth webhook as is.
 */
export class ProviderExchangeError extends AuthConnectError {
  constructor(
    message: string,
    readonly details: ProviderExchangeErrorDetails,
  ) {
    super(codeFor(details), message);
  }
}

function codeFor({ stage, failure }: ProviderExchangeErrorDetails): ErrorCode {
  if (stage === 'refresh') return 'refresh_token_external_error';
  if (failure === 'misconfigured') return 'invalid_connection';
  return failure === 'rejected' ? 'invalid_credentials' : 'bad_gateway';
}

const REDACTED = '[redacted]';
// Values shorter than this are too likely to occur naturally in a message to be worth replacing.
const MIN_SECRET_LENGTH = 4;

/**
 * Removes every secret we sent from text a provider sent back. Providers echo what they got more often
 * than one would hope (`invalid code "abc…"`), and these messages end up in logs and webhooks.
 */
export function redactSecrets(text: string, secrets: readonly (string | undefined | null)[]): string {
  let out = text;
  const values = secrets
    .filter((s): s is string => typeof s === 'string' && s.length >= MIN_SECRET_LENGTH)
    .flatMap((s) => [s, encodeURIComponent(s)])
    .sort((a, b) => b.length - a.length);
  for (const value of values) out = out.split(value).join(REDACTED);
  return out;
}
