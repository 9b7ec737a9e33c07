import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { isDeepStrictEqual } from 'node:util';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { Logger } from '@nestjs/common';
import {
  jsonDepthExceeds,
  jsonTooDeepMessage,
  MESSAGE_JSON_MAX_DEPTH,
  PROXY_RATE_LIMIT_GOVERNANCE_KEY,
  SwitchboardError,
  type Caller,
  type ConnectionCredentials,
  type ProxyRequestHeaders,
  type ResolvedIntegration,
} from '@switchboard/contracts';
import { currentTraceId, trace } from '@switchboard/observability';
import { planAuth, templateVars, type AuthPlan, type ProviderProxySettings } from './auth-injection';
import type { ConnectionResolver } from './connection-resolver';
import type { Exchange } from './exchange';
import {
  forwardedRequestHeaders,
  forwardedResponseHeaders,
  parseProxyHeaders,
  type ReplyHeaders,
} from './headers';
import { ProxyError } from './proxy.errors';
import type { ProxyEngineEnv } from './proxy-engine.env';
import type { UpstreamResponse } from './upstream';
import type { RateLimitGovernor } from './rate-limit-governor';
import { CallAbort } from './call-abort';
import { hasBody, readRequestBody, type RequestBody } from './request-body';
import {
  backoffMs,
  errorCode,
  providerWaitMs,
  quotaExhausted,
  retryableError,
  retryableStatus,
  type RetrySettings,
} from './retry-policy';
import { buildTarget, splitEndpoint, type Target } from './target';
import { recordUpstream, recordUpstreamFailure } from './metrics';
import { resolveBaseUrl } from './templates';

export interface ProxyCall {
  caller: Caller;
  method: string;
  /** The request URL as received, `/proxy/...?...`. */
  url: string;
  req: IncomingMessage;
  res: ServerResponse;
  /**
   * Headers to send with the provider's answer (the gateway's rate-limit and CORS headers); the
   * provider's own header wins on a clash. The object is written into, not copied.
   */
  replyHeaders?: ReplyHeaders;
  /**
   * The caller may send the connection's credentials to any `Base-Url-Override` origin: its key holds
   * `environment:connections:read_credentials`, so it could read them anyway. Without it, an override
   * off the provider's own origin is forwarded with no credentials at all.
   */
  credentialsOnAnyOrigin: boolean;
  /**
   * The body, already read by the caller (the proxy service checks it against the gateway's signature
   * first); `null` = none. Undefined: read from `req` as it comes.
   */
  body?: Buffer | null;
  /**
   * The credentials of a connection not stored yet (a validate-connection script's calls, signed by
   * functions-runtime): used instead of the vault's for this call only, never cached, never refreshed.
   */
  candidate?: ConnectionCredentials;
}

const DECODERS: Record<string, () => NodeJS.ReadWriteStream> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

const NO_BODY: RequestBody = { kind: 'none' };

/** Status codes that never carry a body (and HEAD answers, which never do either). */
const BODILESS = new Set([204, 304]);

/** What a connection's calls share: the credentials to inject and (built on first use) the provider base URL. */
interface ConnectionPlan {
  integration: ResolvedIntegration;
  auth: AuthPlan;
  baseUrl(): string;
}

/**
 * One proxied call from start to finish: validate the Nango headers, find the integration and the
 * connection's credentials, wait for the connection's provider rate limit if one is known, then send
 * and (as configured) retry, refresh once on a 401, and stream the provider's answer back unchanged.
 */
export class ProxyForwarder {
  private readonly logger = new Logger('Proxy');
  private readonly plans = new WeakMap<ConnectionCredentials, ConnectionPlan>();

  constructor(
    private readonly env: ProxyEngineEnv,
    private readonly connections: ConnectionResolver,
    private readonly exchange: Exchange,
    private readonly governor: RateLimitGovernor,
  ) {}

  /**
   * Runs one call to its end and never rejects. Resolves undefined once the answer is written (or the
   * caller left), else with the error the caller must get: a coded one as thrown, anything else logged
   * here and replaced by a bare `server_error` (its details may hold secrets). When the caller goes away,
   * every upstream request and wait stops with it.
   */
  async handle(call: ProxyCall): Promise<SwitchboardError | undefined> {
    const res = call.res;
    const abort = new CallAbort();
    res.once('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    try {
      await this.forward(call, abort);
      return undefined;
    } catch (error) {
      if (abort.aborted) return undefined;
      const failure = error instanceof SwitchboardError ? error : this.unexpected(error);
      if (!res.headersSent) return failure;
      // Too late for an error reply: cutting the connection is how the caller learns the body is incomplete.
      res.destroy();
      return undefined;
    }
  }

  // eslint-disable-next-line max-lines-per-function -- the proxy's hot path: one async frame per call, its send loop sharing the call's plan, body and connection
  private async forward(call: ProxyCall, signal: CallAbort): Promise<void> {
    const options = parseProxyHeaders(call.req.headers);
    const environmentId = call.caller.environmentId;
    const providerConfigKey = options['provider-config-key'];
    const connectionId = options['connection-id'];

    // Usually both are held here; otherwise they are asked for.
    let integration = this.connections.cachedIntegration(environmentId, providerConfigKey);
    let connection =
      integration && this.connections.cachedConnection(environmentId, providerConfigKey, connectionId);
    if (call.candidate) {
      refuseOtherCandidate(call.candidate, providerConfigKey, connectionId);
      integration ??= await this.connections.integration(environmentId, providerConfigKey);
      connection = call.candidate;
    } else if (!integration || !connection)
      [integration, connection] = await this.lookUp(environmentId, providerConfigKey, connectionId);
    const provider = integration.providerDefinition as unknown as ProviderProxySettings;

    const governed =
      this.env.SWITCHBOARD_PROXY_RATE_LIMIT_GOVERNANCE &&
      integration.integrationConfig?.[PROXY_RATE_LIMIT_GOVERNANCE_KEY] !== false;
    const governorKey = governed ? `${environmentId}\u0000${providerConfigKey}\u0000${connectionId}` : '';
    if (governed) {
      const wait = this.governor.waitFor(governorKey);
      if (wait > 0) await signal.pause(wait);
    }

    const route = this.router(call, options, provider, integration);
    let { plan, target } = route(connection);

    const clientHeaders = forwardedRequestHeaders(call.req.headers);
    const requestBody: RequestBody =
      bodyGiven(call) ??
      (hasBody(call.req.headers)
        ? await readRequestBody(call.req, this.env.SWITCHBOARD_PROXY_REPLAY_BUFFER_BYTES)
        : NO_BODY);
    let { body, form } = prepareBody(call.method, requestBody, clientHeaders, plan.auth.bodyFields);
    const replayable = requestBody.kind !== 'stream';

    const { retries, retrySettings } = this.retryPolicy(options, provider);
    const decompress = options.decompress === 'true' || provider.proxy?.decompress === true;

    let attempt = 0;
    let refreshed = false;
    for (;;) {
      let response: UpstreamResponse;
      const sentAt = performance.now();
      try {
        response = await this.exchange.send({
          method: call.method,
          target,
          headers: clientHeaders,
          body,
          form,
          auth: plan.auth,
          // Another origin gets the credentials only from a key that could read them anyway (SECURITY.md).
          forwardAuthOnRedirect:
            options['forward-headers-on-redirect'] === 'true' && call.credentialsOnAnyOrigin,
          signal,
        });
      } catch (error) {
        recordUpstreamFailure(integration.provider, error, sentAt);
        if (signal.aborted) throw error;
        if (replayable && attempt < retries && retryableError(error, call.method)) {
          await signal.pause(this.backoff(attempt));
          attempt++;
          continue;
        }
        throw upstreamFailure(error);
      }

      recordUpstream(integration.provider, response.statusCode, sentAt);
      if (governed) this.observeRateLimit(governorKey, response, provider);

      if (
        response.statusCode === 401 &&
        plan.auth.refreshable &&
        !call.candidate &&
        !refreshed &&
        replayable
      ) {
        refreshed = true;
        const fresh = await this.refreshedConnection(call, options, connection, response);
        if (fresh) {
          connection = fresh;
          // A refresh may also change connection config (an instance URL), hence the base URL.
          ({ plan, target } = route(connection));
          ({ body, form } = prepareBody(call.method, requestBody, clientHeaders, plan.auth.bodyFields));
          continue;
        }
      }

      if (
        retrySettings &&
        replayable &&
        attempt < retries &&
        retryableStatus(response.statusCode, call.method, retrySettings)
      ) {
        const wait = providerWaitMs(response.headers, provider.proxy?.retry) ?? this.backoff(attempt);
        if (wait <= this.env.SWITCHBOARD_PROXY_MAX_RETRY_WAIT_MS) {
          await response.body.dump();
          await signal.pause(wait);
          attempt++;
          continue;
        }
      }
      // `return await`: returning the promise from an async function costs two more turns and a promise.
      return await sendResponse(call, response, decompress);
    }
  }

  /**
   * How the call's connection becomes its plan and target URL. A Base-Url-Override off the provider's
   * origins gets no credentials, unless the caller's key may send them to any origin.
   */
  private router(
    call: ProxyCall,
    options: ProxyRequestHeaders,
    provider: ProviderProxySettings,
    integration: ResolvedIntegration,
  ): (connection: ConnectionCredentials) => { plan: ConnectionPlan; target: Target } {
    const override = options['base-url-override'];
    const baseTemplate = provider.proxy?.base_url;
    if (!override && !baseTemplate) {
      throw new ProxyError('invalid_headers', 'This provider has no proxy base URL: send Base-Url-Override');
    }
    const { path, query } = splitEndpoint(call.url);
    return (connection) => {
      const full = this.planFor(provider, integration, connection);
      const plan =
        override && !call.credentialsOnAnyOrigin && !onProviderOrigin(override, full)
          ? uncredentialed(full)
          : full;
      const target = buildTarget(
        override ? override : plan.baseUrl(),
        override ? 'override' : 'provider',
        path,
        query,
        plan.auth.query,
      );
      return { plan, target };
    };
  }

  /** How many retries the call gets (capped by configuration), and on which statuses and provider codes. */
  private retryPolicy(
    options: ProxyRequestHeaders,
    provider: ProviderProxySettings,
  ): { retries: number; retrySettings: RetrySettings | undefined } {
    const retries = Math.min(options.retries ?? 0, this.env.SWITCHBOARD_PROXY_MAX_RETRIES);
    const retrySettings: RetrySettings | undefined =
      retries > 0
        ? {
            retryOn: new Set((options['retry-on'] ?? '').split(',').filter(Boolean).map(Number)),
            providerCodes: provider.proxy?.retry?.error_code ?? [],
          }
        : undefined;
    return { retries, retrySettings };
  }

  /**
   * After a 401: the connection's credentials refreshed now, or undefined when they did not change (the
   * 401 is then the answer). The 401's body is dropped before another try.
   */
  private async refreshedConnection(
    call: ProxyCall,
    options: ProxyRequestHeaders,
    connection: ConnectionCredentials,
    response: UpstreamResponse,
  ): Promise<ConnectionCredentials | undefined> {
    const fresh = await this.connections
      .connection(call.caller.environmentId, options['provider-config-key'], options['connection-id'], true)
      .catch(async (error: unknown) => {
        await response.body.dump();
        throw error;
      });
    if (isDeepStrictEqual(fresh.credentials, connection.credentials)) return undefined;
    await response.body.dump();
    return fresh;
  }

  /** Both lookups at once; an unknown integration is reported before an unknown connection. */
  private async lookUp(
    environmentId: number,
    providerConfigKey: string,
    connectionId: string,
  ): Promise<[ResolvedIntegration, ConnectionCredentials]> {
    const [integration, connection] = await Promise.allSettled([
      this.connections.integration(environmentId, providerConfigKey),
      this.connections.connection(environmentId, providerConfigKey, connectionId),
    ]);
    if (integration.status === 'rejected') throw integration.reason;
    if (connection.status === 'rejected') throw connection.reason;
    return [integration.value, connection.value];
  }

  /**
   * The credentials to inject and the provider base URL depend only on the integration and the
   * connection, so they are worked out once per pair of cached objects (a new object from the resolver, as
   * after a refresh or a change, gets a new plan). Nothing downstream mutates a plan.
   */
  private planFor(
    provider: ProviderProxySettings,
    integration: ResolvedIntegration,
    connection: ConnectionCredentials,
  ): ConnectionPlan {
    const known = this.plans.get(connection);
    if (known && known.integration === integration) return known;
    const auth = planAuth(provider, integration, connection);
    let baseUrl: string | undefined;
    const template = provider.proxy?.base_url;
    const plan: ConnectionPlan = {
      integration,
      auth,
      // Only built when needed (no Base-Url-Override); a failure is thrown each time, never kept.
      baseUrl: () => (baseUrl ??= resolveBaseUrl(template!, templateVars(integration, connection))),
    };
    this.plans.set(connection, plan);
    return plan;
  }

  private unexpected(error: unknown): ProxyError {
    this.logger.error(
      `proxy call failed (trace ${currentTraceId() ?? '-'}): ${(error as Error)?.stack ?? String(error)}`,
    );
    trace.getActiveSpan()?.recordException(error as Error);
    return new ProxyError('server_error', 'An unexpected error occurred in the proxy');
  }

  private backoff(attempt: number): number {
    return backoffMs(
      attempt,
      this.env.SWITCHBOARD_PROXY_RETRY_BASE_MS,
      this.env.SWITCHBOARD_PROXY_RETRY_MAX_DELAY_MS,
    );
  }

  private observeRateLimit(key: string, response: UpstreamResponse, provider: ProviderProxySettings): void {
    const retry = provider.proxy?.retry;
    if (response.statusCode === 429 || quotaExhausted(response.headers, retry)) {
      const wait = providerWaitMs(response.headers, retry);
      if (wait !== undefined) this.governor.block(key, wait);
    }
  }
}

/** No header, query parameter, body field or signature: what an override to a foreign origin carries. */
const NO_AUTH: AuthPlan = {
  headers: {},
  query: [],
  bodyFields: undefined,
  sign: undefined,
  refreshable: false,
};

function uncredentialed(plan: ConnectionPlan): ConnectionPlan {
  return { integration: plan.integration, auth: NO_AUTH, baseUrl: plan.baseUrl };
}

/**
 * Whether a Base-Url-Override points at the provider's own origin (scheme, host and port of the catalog's
 * base URL as resolved for this connection). A provider without a base URL, or one this connection
 * cannot resolve, has no origin of its own, so every override is foreign.
 */
function onProviderOrigin(override: string, plan: ConnectionPlan): boolean {
  try {
    return new URL(override).origin === new URL(plan.baseUrl()).origin;
  } catch {
    return false;
  }
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/**
 * What goes upstream: the caller's bytes unchanged, except when the provider template puts the
 * credential into a JSON body (then the object gets those fields). Urlencoded fields are parsed for
 * OAuth 1.0a signing only.
 */
function prepareBody(
  method: string,
  requestBody: RequestBody,
  headers: Record<string, string>,
  bodyFields: AuthPlan['bodyFields'],
): { body: Buffer | Readable | undefined; form: Record<string, string | string[]> | undefined } {
  const type = headers['content-type']?.toLowerCase() ?? '';
  if (requestBody.kind === 'stream') {
    if (requestBody.length !== undefined) headers['content-length'] = String(requestBody.length);
    return { body: requestBody.stream, form: undefined };
  }
  delete headers['content-length'];
  let data = requestBody.kind === 'buffer' ? requestBody.data : undefined;
  if (bodyFields) {
    if (data === undefined && BODY_METHODS.has(method)) {
      data = Buffer.from(JSON.stringify(bodyFields));
      headers['content-type'] ??= 'application/json';
    } else if (data !== undefined && type.includes('json')) {
      const parsed = tryJson(data);
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed))
        data = Buffer.from(JSON.stringify({ ...parsed, ...bodyFields }));
    }
  }
  let form: Record<string, string | string[]> | undefined;
  if (data !== undefined && type.startsWith('application/x-www-form-urlencoded')) {
    form = {};
    for (const [key, value] of new URLSearchParams(data.toString('utf8'))) {
      const existing = form[key];
      form[key] =
        existing === undefined ? value : Array.isArray(existing) ? [...existing, value] : [existing, value];
    }
  }
  return { body: data, form };
}

function tryJson(data: Buffer): unknown {
  // Merging the credential into a 10,000-level body would overflow the stack re-serialising it.
  if (jsonDepthExceeds(data, MESSAGE_JSON_MAX_DEPTH))
    throw new ProxyError('invalid_body', jsonTooDeepMessage('The body', MESSAGE_JSON_MAX_DEPTH));
  try {
    return JSON.parse(data.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** What a failed attempt means for the caller (exported for the egress tests, which assert the same mapping). */
export function upstreamFailure(error: unknown): Error {
  if (error instanceof ProxyError) return error;
  const code = errorCode(error);
  if (code === 'SWITCHBOARD_EGRESS_REFUSED') {
    return new ProxyError(
      'egress_refused',
      `The destination is not allowed by the egress policy: ${(error as { reason?: string }).reason ?? ''}`.trim(),
    );
  }
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'ETIMEDOUT') {
    return new ProxyError('gateway_timeout', 'The provider did not answer in time');
  }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return new ProxyError('bad_gateway', 'The provider host name does not resolve');
  return new ProxyError('bad_gateway', 'Could not reach the provider');
}

/** Not async: the one promise is the body's (a synchronous throw rejects the caller, `forward`, all the same). */
function sendResponse(call: ProxyCall, response: UpstreamResponse, decompress: boolean): Promise<void> {
  const headers = forwardedResponseHeaders(response.headers, call.replyHeaders);
  const encoding =
    typeof headers['content-encoding'] === 'string'
      ? headers['content-encoding'].trim().toLowerCase()
      : undefined;
  const hasBody = call.method !== 'HEAD' && !BODILESS.has(response.statusCode);
  const decoder = decompress && hasBody && encoding ? DECODERS[encoding] : undefined;
  if (decoder) {
    delete headers['content-encoding'];
    delete headers['content-length'];
  }
  call.res.writeHead(response.statusCode, headers);
  // If the caller leaves or the provider breaks off mid-body, both connections are torn down.
  return response.body.pipeTo(call.res, decoder?.());
}

/** A validation run's candidate credentials serve only the connection they are for. */
function refuseOtherCandidate(
  candidate: NonNullable<ProxyCall['candidate']>,
  providerConfigKey: string,
  connectionId: string,
): void {
  if (candidate.providerConfigKey !== providerConfigKey || candidate.connectionId !== connectionId) {
    throw new ProxyError('forbidden', 'The candidate credentials are for another connection');
  }
}

/** The body the caller handed over already read (undefined: it is still on the request). */
function bodyGiven(call: ProxyCall): RequestBody | undefined {
  if (call.body === undefined) return undefined;
  return call.body === null || call.body.length === 0 ? NO_BODY : { kind: 'buffer', data: call.body };
}
