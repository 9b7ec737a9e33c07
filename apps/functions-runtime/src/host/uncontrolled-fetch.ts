import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { createEgressAgent, EgressPolicy, EgressRefusedError } from '@switchboard/egress';
import { fetch, type Agent } from 'undici';
import { z } from 'zod';
import { FUNCTIONS_RUNTIME_ENV, type FunctionsRuntimeEnv } from '../config/env';
import { HostCallError } from './host-call.errors';

const CONNECT_TIMEOUT_MS = 10_000;
const MAX_REDIRECTS = 10;

export const uncontrolledFetchArgsSchema = z.object({
  url: z.string().min(1).max(8192),
  method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS']).default('GET'),
  headers: z.record(z.string().max(256), z.string().max(16 * 1024)).default({}),
  body: z.string().nullish(),
});
export type UncontrolledFetchArgs = z.infer<typeof uncontrolledFetchArgsSchema>;

/** What the sandbox builds its `Response` from. */
export interface UncontrolledFetchReply {
  url: string;
  status: number;
  statusText: string;
  headers: [string, string][];
  bodyBase64: string;
}

/**
 * `nango.uncontrolledFetch`: a request a script makes to a URL of its choosing, with no connection
 * credentials and no proxy behaviour (no retries, no templates). Every connection it opens, redirects
 * included, goes through the egress (SSRF) policy: the host is resolved once here, refused when an address
 * is private, loopback, link-local or metadata unless `SWITCHBOARD_FUNCTIONS_EGRESS_ALLOW` (else the shared
 * `SWITCHBOARD_EGRESS_ALLOW`) excepts it, and the checked address is the one connected to. Only http(s).
 */
@Injectable()
export class UncontrolledFetch implements OnModuleDestroy {
  private readonly agent: Agent;

  constructor(@Inject(FUNCTIONS_RUNTIME_ENV) private readonly env: FunctionsRuntimeEnv) {
    this.agent = createEgressAgent({
      policy: EgressPolicy.forTraffic(
        'SWITCHBOARD_FUNCTIONS_EGRESS_ALLOW',
        env.SWITCHBOARD_FUNCTIONS_EGRESS_ALLOW,
        env.SWITCHBOARD_EGRESS_ALLOW,
      ),
      connectTimeoutMs: CONNECT_TIMEOUT_MS,
    });
  }

  async onModuleDestroy(): Promise<void> {
    await this.agent.close().catch(() => undefined);
  }

  async send(args: UncontrolledFetchArgs, signal: AbortSignal): Promise<UncontrolledFetchReply> {
    let url = this.checkedUrl(args.url);
    let method = args.method;
    let body = args.body ?? undefined;
    // Redirects are followed here, one hop at a time, so each target's scheme is checked as the first was
    // (the agent checks every address it connects to).
    for (let hop = 0; ; hop++) {
      let response;
      try {
        response = await fetch(url, {
          method,
          headers: args.headers,
          ...(body !== undefined && method !== 'GET' && method !== 'HEAD' ? { body } : {}),
          redirect: 'manual',
          dispatcher: this.agent,
          signal,
        });
      } catch (error) {
        throw this.failure(error);
      }
      const location = response.headers.get('location');
      if (response.status >= 300 && response.status < 400 && location && hop < MAX_REDIRECTS) {
        await response.body?.cancel().catch(() => undefined);
        url = this.checkedUrl(new URL(location, url).toString());
        if (
          response.status === 303 ||
          ((response.status === 301 || response.status === 302) && method === 'POST')
        ) {
          method = 'GET';
          body = undefined;
        }
        continue;
      }
      const bytes = await this.readLimited(response);
      return {
        url: url.toString(),
        status: response.status,
        statusText: response.statusText,
        headers: [...response.headers.entries()],
        bodyBase64: bytes.toString('base64'),
      };
    }
  }

  private checkedUrl(raw: string): URL {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new HostCallError('invalid_arguments', 'nango.uncontrolledFetch: the url is not a valid URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new HostCallError(
        'egress_refused',
        `nango.uncontrolledFetch: ${url.protocol} URLs are not allowed`,
      );
    }
    if (url.username || url.password) {
      throw new HostCallError(
        'egress_refused',
        'nango.uncontrolledFetch: URLs with credentials are not allowed',
      );
    }
    return url;
  }

  private async readLimited(response: Response | Awaited<ReturnType<typeof fetch>>): Promise<Buffer> {
    const limit = this.env.FUNCTIONS_PROXY_RESPONSE_LIMIT_BYTES;
    const chunks: Buffer[] = [];
    let size = 0;
    if (!response.body) return Buffer.alloc(0);
    for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
      size += chunk.byteLength;
      if (size > limit) {
        await response.body.cancel().catch(() => undefined);
        throw new HostCallError(
          'response_too_large',
          `nango.uncontrolledFetch: the response is over ${limit} bytes`,
        );
      }
      chunks.push(Buffer.from(chunk));
    }
    return Buffer.concat(chunks);
  }

  private failure(error: unknown): HostCallError {
    const cause = (error as { cause?: unknown })?.cause;
    if (error instanceof EgressRefusedError || cause instanceof EgressRefusedError) {
      const refused = (cause instanceof EgressRefusedError ? cause : error) as EgressRefusedError;
      return new HostCallError('egress_refused', `nango.uncontrolledFetch: ${refused.message}`);
    }
    if ((error as Error)?.name === 'AbortError') {
      return new HostCallError('script_aborted', 'nango.uncontrolledFetch: the run has ended');
    }
    return new HostCallError('fetch_failed', 'nango.uncontrolledFetch: the request failed');
  }
}
