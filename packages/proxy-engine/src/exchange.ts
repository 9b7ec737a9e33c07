import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { ClientCertificateAgents, type EgressPolicy, type EgressVerdict } from '@switchboard/egress';
import { endClientSpan, startClientSpan } from '@switchboard/observability';
import type { AuthPlan } from './auth-injection';
import type { CallAbort } from './call-abort';
import { UpstreamBody, type UpstreamResponse } from './upstream';
import { EgressRefusedError, ProxyError } from './proxy.errors';
import type { Target } from './target';

export interface ExchangeTimeouts {
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
}

export interface ExchangeRequest {
  method: string;
  target: Target;
  /** Headers from the caller (Nango-Proxy-* and the body's own headers); they override injected ones. */
  headers: Record<string, string>;
  body: Buffer | Readable | undefined;
  /** Form fields of a urlencoded body, which OAuth 1.0a signs too. */
  form: Record<string, string | string[]> | undefined;
  auth: AuthPlan;
  /**
   * Send credentials to a redirect target on another origin too: Forward-Headers-On-Redirect: true from a
   * caller allowed to aim credentials anywhere (a key with connections:read_credentials).
   */
  forwardAuthOnRedirect: boolean;
  signal: CallAbort;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const BODY_HEADERS = ['content-type', 'content-length', 'content-encoding'];
const VERDICTS_MAX = 1_000;
const CLIENT_CERTIFICATE_CONNECT_TIMEOUT_MS = 10_000;

/**
 * One attempt against the provider: credentials applied for the exact URL, redirects followed hop by
 * hop (at most `maxRedirects`), every hop going through the egress policy again, and credentials only
 * sent to another origin when the caller asked for it. A redirect that cannot be replayed (a streamed
 * body on 307/308) or one past the limit is returned to the caller as it is.
 */
export class Exchange {
  private readonly verdicts = new Map<string, EgressVerdict>();
  private clientCertificateAgents: ClientCertificateAgents | undefined;

  constructor(
    private readonly dispatcher: Dispatcher,
    private readonly policy: EgressPolicy,
    private readonly timeouts: ExchangeTimeouts,
    private readonly maxRedirects: number,
  ) {}

  /** The policy's verdict on an origin's host name (the policy is fixed configuration, so it is kept per origin). */
  private verdictFor(origin: string): EgressVerdict {
    let verdict = this.verdicts.get(origin);
    if (!verdict) {
      verdict = this.policy.checkHost(new URL(origin).hostname);
      if (this.verdicts.size >= VERDICTS_MAX) this.verdicts.clear();
      this.verdicts.set(origin, verdict);
    }
    return verdict;
  }

  async send(request: ExchangeRequest): Promise<UpstreamResponse> {
    let { method, target, body, headers } = request;
    const firstOrigin = target.origin;
    for (let hop = 0; ; hop++) {
      const verdict = this.verdictFor(target.origin);
      if (!verdict.allowed) throw new EgressRefusedError(verdict.reason);

      const withAuth = target.origin === firstOrigin || request.forwardAuthOnRedirect;
      const outgoing: Record<string, string> = withAuth ? { ...request.auth.headers } : {};
      if (withAuth && request.auth.sign)
        outgoing.authorization = request.auth.sign(method, `${target.origin}${target.path}`, request.form);
      if (withAuth && request.auth.perRequest) Object.assign(outgoing, request.auth.perRequest());
      Object.assign(outgoing, headers);
      if (withAuth && request.auth.signRequest)
        Object.assign(outgoing, request.auth.signRequest(method, target.origin, target.path, outgoing, body));

      // The gateway and the proxy service run without the undici instrumentation: this is the call's span.
      const span = startClientSpan(method, target.origin, target.path, outgoing);
      let response: UpstreamResponse;
      try {
        response = await UpstreamBody.send(
          withAuth && request.auth.clientCertificate
            ? (this.clientCertificateAgents ??= new ClientCertificateAgents(
                this.policy,
                CLIENT_CERTIFICATE_CONNECT_TIMEOUT_MS,
              )).for(request.auth.clientCertificate)
            : this.dispatcher,
          {
            origin: target.origin,
            path: target.path,
            method: method as Dispatcher.HttpMethod,
            headers: outgoing,
            body: body ?? null,
            headersTimeout: this.timeouts.headersTimeoutMs,
            bodyTimeout: this.timeouts.bodyTimeoutMs,
          },
          request.signal,
        );
      } catch (error) {
        endClientSpan(span, undefined, error);
        throw error;
      }
      endClientSpan(span, response);

      const location = response.headers.location;
      if (!REDIRECTS.has(response.statusCode) || typeof location !== 'string' || hop >= this.maxRedirects)
        return response;
      const keepsBody = response.statusCode === 307 || response.statusCode === 308;
      if (keepsBody && body !== undefined && !Buffer.isBuffer(body)) return response;

      let next: URL;
      try {
        next = new URL(location, `${target.origin}${target.path}`);
      } catch {
        return response;
      }
      if (next.protocol !== 'http:' && next.protocol !== 'https:') {
        await response.body.dump();
        throw new EgressRefusedError(`a redirect to a ${next.protocol} URL`);
      }
      if (next.username || next.password) {
        await response.body.dump();
        throw new ProxyError('bad_gateway', 'The provider redirected to a URL with credentials in it');
      }
      await response.body.dump();
      if (!keepsBody && (response.statusCode === 303 || method === 'POST')) {
        if (method !== 'HEAD') method = 'GET';
        body = undefined;
        headers = Object.fromEntries(
          Object.entries(headers).filter(([name]) => !BODY_HEADERS.includes(name)),
        );
      }
      const authQuery =
        next.origin === firstOrigin || request.forwardAuthOnRedirect ? request.auth.query : [];
      for (const [name, value] of authQuery) next.searchParams.set(name, value);
      target = { origin: next.origin, path: `${next.pathname}${next.search}` };
    }
  }
}
