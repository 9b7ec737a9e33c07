import { Logger } from '@nestjs/common';
import { fetch, type Response } from 'undici';
import { ProviderExchangeError, redactSecrets, type ExchangeStage } from './exchange.errors';
import type { ClientCertificate } from '@switchboard/egress';
import { providerEgress, providerEgressWithCertificate } from './provider-egress';

/** Token endpoints answer in well under this; a hung provider must not hold a connect flow or a refresh lock. */
export const DEFAULT_PROVIDER_TIMEOUT_MS = 15_000;
// Token responses are a few hundred bytes; this only bounds what a hostile endpoint can make us buffer.
const MAX_RESPONSE_BYTES = 1024 * 1024;
// What is kept of a provider's answer for the logs: redacted first over this much, then cut to the second.
const MAX_REDACTED_CHARS = 16 * 1024;
const MAX_DETAIL_CHARS = 500;
/** A provider's OAuth `error` is shown only when it is a plain code like `invalid_client`. */
const PLAIN_ERROR_CODE = /^[A-Za-z0-9_.-]{1,64}$/;

const logger = new Logger('ProviderHttp');

const STAGE_LABEL: Record<ExchangeStage, string> = {
  authorization_code: 'authorization code exchange',
  refresh: 'token refresh',
  client_credentials: 'client credentials grant',
  oauth1_request_token: 'OAuth 1.0a request token',
  oauth1_access_token: 'OAuth 1.0a access token',
  app_installation_token: 'app installation token',
  app_installation_check: 'installation check',
  post_connect: 'post-connect call',
  two_step_token: 'token request',
  bill_login: 'login',
  jwt_signing: 'JWT signing',
};

export interface ProviderRequest {
  stage: ExchangeStage;
  /** The provider's catalog key, for messages. */
  provider: string;
  method: 'POST' | 'GET' | 'PUT';
  url: URL;
  headers: Record<string, string>;
  body?: string;
  /** Everything secret in this request; removed from any text that goes into an error. */
  secrets: (string | undefined | null)[];
  timeoutMs?: number;
  /** Presented in the TLS handshake (providers with `mutual_tls`). */
  clientCertificate?: ClientCertificate;
}

export interface ProviderResponse {
  status: number;
  /** The answer parsed as JSON or as a form (`a=1&b=2`, what some OAuth 1.0a and older OAuth 2 servers send). */
  body: Record<string, unknown>;
}

type Failure = (
  failure: 'rejected' | 'unreachable' | 'invalid_response',
  message: string,
  extra?: { status?: number; error?: string; said?: string },
) => ProviderExchangeError;

/** Builds a call's errors: our sentence with the provider's plain error code, its words logged redacted. */
function failureOf(request: ProviderRequest): Failure {
  // The header values we sent (a Basic header is base64 of `client_id:secret`) may come back whole.
  const secrets = [
    ...request.secrets,
    ...Object.entries(request.headers)
      .filter(([name]) => name.toLowerCase() === 'authorization')
      .flatMap(([, value]) => [value, value.replace(/^\S+\s+/, '')]),
  ];
  return (failure, message, extra = {}) => {
    const code = extra.error !== undefined ? plainCode(extra.error, secrets) : undefined;
    const said = extra.said ? redactSecrets(extra.said.slice(0, MAX_REDACTED_CHARS), secrets) : undefined;
    const detail = said?.slice(0, MAX_DETAIL_CHARS);
    const error = new ProviderExchangeError(
      redactSecrets(code ? `${message} (${code})` : message, secrets),
      {
        stage: request.stage,
        failure,
        provider: request.provider,
        ...(extra.status !== undefined ? { providerStatus: extra.status } : {}),
        ...(code !== undefined ? { providerError: code } : {}),
      },
      detail,
    );
    logger.warn(`${error.message}${detail ? `; the provider said: ${detail}` : ''}`);
    return error;
  };
}

/**
 * One call to a provider's token endpoint. A 2xx with a usable body is returned; anything else throws a
 * ProviderExchangeError whose message is our own sentence with the HTTP status and the provider's OAuth
 * error code (when it is a plain code); what the provider wrote goes to the log only, redacted in every
 * encoding. Redirects are not followed: a token endpoint that redirects would get our client secret
 * re-sent to wherever it points.
 */
export async function callProvider(request: ProviderRequest): Promise<ProviderResponse> {
  const label = `${request.provider} ${STAGE_LABEL[request.stage]}`;
  const fail = failureOf(request);

  let response: Response;
  try {
    response = await fetch(request.url, {
      method: request.method,
      headers: { 'user-agent': 'Switchboard', accept: 'application/json', ...request.headers },
      ...(request.body !== undefined ? { body: request.body } : {}),
      redirect: 'manual',
      signal: AbortSignal.timeout(request.timeoutMs ?? DEFAULT_PROVIDER_TIMEOUT_MS),
      dispatcher: request.clientCertificate
        ? providerEgressWithCertificate(request.clientCertificate)
        : providerEgress(),
    });
  } catch (error) {
    throw fail('unreachable', `${label} failed: ${networkReason(error)} (${request.url.host})`);
  }

  let text: string;
  try {
    text = await readCapped(response);
  } catch (error) {
    throw fail('invalid_response', `${label} failed: ${networkReason(error)} while reading the answer`);
  }
  const body = parseBody(text, response.headers.get('content-type'));
  const providerError = body ? errorCodeOf(body) : undefined;
  const said = text.trim();
  const refusal = (status: number) =>
    fail(
      status >= 500 ? 'unreachable' : 'rejected',
      `${label} failed: the provider answered HTTP ${status}`,
      {
        status,
        ...(providerError ? { error: providerError } : {}),
        said,
      },
    );

  if (response.status >= 300 && response.status < 400) {
    throw fail(
      'invalid_response',
      `${label} failed: the token endpoint redirected (HTTP ${response.status})`,
      { status: response.status },
    );
  }
  if (response.status >= 400) throw refusal(response.status);
  if (!body) {
    throw fail(
      'invalid_response',
      `${label} failed: the answer is neither JSON nor a form (HTTP ${response.status})`,
      { status: response.status, said },
    );
  }
  // Some servers (GitHub's OAuth among them) answer 200 with an `error` body.
  if (providerError && !('access_token' in body) && !('token' in body) && !('oauth_token' in body)) {
    throw refusal(response.status);
  }
  return { status: response.status, body };
}

/** The provider's error code, when it is a plain code that carries none of our secrets. */
function plainCode(code: string, secrets: readonly (string | undefined | null)[]): string | undefined {
  return PLAIN_ERROR_CODE.test(code) && redactSecrets(code, secrets) === code ? code : undefined;
}

async function readCapped(response: Response): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_RESPONSE_BYTES) {
      await reader.cancel();
      throw new Error('the answer is larger than 1 MiB');
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parseBody(text: string, contentType: string | null): Record<string, unknown> | undefined {
  const trimmed = text.trim();
  if (trimmed === '') return undefined;
  const looksJson = trimmed.startsWith('{') || (contentType ?? '').includes('json');
  if (looksJson) {
    try {
      const parsed: unknown = JSON.parse(trimmed);
      return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
        ? (parsed as Record<string, unknown>)
        : undefined;
    } catch {
      return undefined;
    }
  }
  if (/^[^=&\s<]+=[^&]*(?:&[^=&\s]+=[^&]*)*$/.test(trimmed)) {
    return Object.fromEntries(new URLSearchParams(trimmed));
  }
  return undefined;
}

function errorCodeOf(body: Record<string, unknown>): string | undefined {
  const error = body['error'];
  if (typeof error === 'string' && error !== '') return error.slice(0, 100);
  if (typeof error === 'object' && error !== null) {
    const code = (error as Record<string, unknown>)['code'] ?? (error as Record<string, unknown>)['type'];
    if (typeof code === 'string') return code.slice(0, 100);
  }
  const problem = body['oauth_problem'];
  if (typeof problem === 'string' && problem !== '') return problem.slice(0, 100);
  return undefined;
}

function networkReason(error: unknown): string {
  if (error instanceof Error) {
    if (error.name === 'TimeoutError' || error.name === 'AbortError')
      return 'the provider did not answer in time';
    const cause = (error as Error & { cause?: { code?: unknown; reason?: unknown } }).cause;
    if (cause?.code === 'SWITCHBOARD_EGRESS_REFUSED')
      return `the provider address is refused by the egress policy (${String(cause.reason)})`;
    if (cause && typeof cause.code === 'string') return `could not reach the provider (${cause.code})`;
    return `could not reach the provider (${error.message})`;
  }
  return 'could not reach the provider';
}
