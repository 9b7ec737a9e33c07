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
 * answer is `bad_gateway`. The message is our own sentence (the stage, the HTTP status, the provider's
 * OAuth error code when it is a plain code), never text the provider wrote: it travels to the end user's
 * page, the public error body, the connection's error and the auth webhook. What the provider said is in
 * `logDetail`, redacted, for our logs only (it is not part of the wire error).
 */
export class ProviderExchangeError extends AuthConnectError {
  constructor(
    message: string,
    readonly details: ProviderExchangeErrorDetails,
    readonly logDetail?: string,
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
// A cut-off copy of a secret (a provider that truncates what it echoes) is removed from this length on.
const MIN_PREFIX_LENGTH = 6;

/** `application/x-www-form-urlencoded` as URLSearchParams writes it (space as `+`, `~` encoded). */
const formEncoded = (s: string) => new URLSearchParams({ x: s }).toString().slice(2);
const lowerPercent = (s: string) => s.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase());

/**
 * Every form in which a secret we sent may come back: as is, URL-encoded both ways (`%20` and `+`, upper
 * and lower case hex), JSON-escaped, and base64/base64url. Authorization header values are passed in
 * whole (a Basic header's base64 of `client_id:secret`).
 */
export function secretForms(secrets: readonly (string | undefined | null)[]): string[] {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (typeof secret !== 'string' || secret.length < MIN_SECRET_LENGTH) continue;
    const encodings = [
      secret,
      encodeURIComponent(secret),
      formEncoded(secret),
      JSON.stringify(secret).slice(1, -1),
      Buffer.from(secret).toString('base64'),
      Buffer.from(secret).toString('base64').replace(/=+$/, ''),
      Buffer.from(secret).toString('base64url'),
    ];
    for (const form of encodings) {
      forms.add(form);
      forms.add(lowerPercent(form));
    }
  }
  return [...forms].filter((f) => f.length >= MIN_SECRET_LENGTH).sort((a, b) => b.length - a.length);
}

/**
 * Removes every secret we sent, in every encoding, from text a provider sent back, and any cut-off start
 * of one. Providers echo what they got more often than one would hope (`invalid code "abc…"`, the whole
 * request in an error), and these texts end up in logs. Redact before cutting a text short, never after.
 */
export function redactSecrets(text: string, secrets: readonly (string | undefined | null)[]): string {
  const forms = secretForms(secrets);
  let out = text;
  for (const form of forms) out = out.split(form).join(REDACTED);
  for (const form of forms) {
    for (let length = form.length - 1; length >= MIN_PREFIX_LENGTH; length--) {
      const prefix = form.slice(0, length);
      if (out.includes(prefix)) out = out.split(prefix).join(REDACTED);
    }
  }
  return out;
}
