import type { KeyObject } from 'node:crypto';
import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { PROXY_INTERNAL_HEADERS, type CandidateConnection, type Caller } from '@switchboard/contracts';
import { SpanStatusCode, trace } from '@switchboard/observability';
import { Pool, type Dispatcher } from 'undici';
import { z } from 'zod';
import { FUNCTIONS_RUNTIME_ENV, type FunctionsRuntimeEnv } from '../config/env';
import { HostCallError } from './host-call.errors';
import { internalSigningKey, proxyBodyDigest, signProxyCall } from '@switchboard/crypto';

const tracer = trace.getTracer('@switchboard/functions-runtime');

/** What a script may put in `nango.proxy(config)` (Nango's `ProxyConfiguration`), after the sandbox's encoding. */
export const proxyArgsSchema = z.object({
  method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS']),
  endpoint: z.string().min(1).max(8192),
  params: z
    .union([z.string().max(8192), z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]))])
    .optional(),
  headers: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
  body: z
    .discriminatedUnion('kind', [
      z.object({ kind: z.literal('json'), value: z.unknown() }),
      z.object({ kind: z.literal('text'), value: z.string() }),
      z.object({ kind: z.literal('form'), value: z.string() }),
      z.object({ kind: z.literal('base64'), value: z.string() }),
    ])
    .optional(),
  retries: z.number().int().min(0).max(100).optional(),
  retryOn: z.array(z.number().int().min(100).max(599)).optional(),
  baseUrlOverride: z.string().max(2048).optional(),
  decompress: z.boolean().optional(),
  responseType: z.enum(['json', 'text', 'arraybuffer', 'blob', 'stream', 'document']).optional(),
  connectionId: z.string().optional(),
  providerConfigKey: z.string().optional(),
});
export type ProxyArgs = z.infer<typeof proxyArgsSchema>;

/** The axios-like answer the sandbox turns into `{status, headers, data}` (bytes as base64 when asked for). */
export interface ProxyAnswer {
  status: number;
  statusText: string;
  headers: Record<string, string>;
  data?: unknown;
  base64?: string;
}

export interface ProxyTarget {
  caller: Caller;
  connectionId: string;
  providerConfigKey: string;
  /** validate-connection: the credentials to use, the connection not being stored yet. */
  candidate?: CandidateConnection;
  provider?: string;
}

/**
 * Sends a script's `nango.proxy()` call to the proxy service, signed as the run's environment, so it gets
 * exactly what `/proxy` gets: the connection's credentials injected there (this process never holds them
 * for a proxied call), the egress (SSRF) policy, retries, the 401 refresh and rate-limit governance.
 */
@Injectable()
export class ProxyClient implements OnApplicationShutdown {
  private readonly pool: Pool;
  private readonly key: KeyObject;

  constructor(@Inject(FUNCTIONS_RUNTIME_ENV) private readonly env: FunctionsRuntimeEnv) {
    // The proxy service enforces the provider timeouts; the run's wall clock bounds the wait here.
    this.pool = new Pool(env.SWITCHBOARD_PROXY_URL, { headersTimeout: 0, bodyTimeout: 0 });
    const key = internalSigningKey(env);
    // The env schema already refuses a boot without either; this keeps the type honest.
    if (!key) throw new Error('SWITCHBOARD_INTERNAL_TOKEN or SWITCHBOARD_MASTER_KEYS is required');
    this.key = key;
  }

  async onApplicationShutdown(): Promise<void> {
    await this.pool.close().catch(() => undefined);
  }

  async send(target: ProxyTarget, args: ProxyArgs, signal: AbortSignal): Promise<ProxyAnswer> {
    const path = proxyPath(args);
    const headers: Record<string, string> = {
      'provider-config-key': target.providerConfigKey,
      'connection-id': target.connectionId,
    };
    if (args.retries !== undefined) headers.retries = String(args.retries);
    if (args.retryOn?.length) headers['retry-on'] = args.retryOn.join(',');
    if (args.baseUrlOverride) headers['base-url-override'] = args.baseUrlOverride;
    if (args.decompress !== undefined) headers.decompress = String(args.decompress);
    // As the official client sends them: the proxy forwards `Nango-Proxy-X` to the provider as `X`.
    for (const [name, value] of Object.entries(args.headers ?? {})) {
      headers[`nango-proxy-${name.toLowerCase()}`] = String(value);
    }
    const body = encodeBody(args, headers);
    const candidate = target.candidate && {
      connectionId: target.connectionId,
      providerConfigKey: target.providerConfigKey,
      provider: target.provider ?? '',
      // The provider's raw token answer is not needed to call it, and would only swell the header.
      credentials: withoutRaw(target.candidate.credentials),
      connectionConfig: target.candidate.connectionConfig,
      metadata: null,
    };
    // A script's calls never carry credentials to an origin other than the provider's own.
    Object.assign(
      headers,
      signProxyCall(this.key, {
        method: args.method,
        url: path,
        caller: { ...target.caller, credentialsOnAnyOrigin: false, ...(candidate ? { candidate } : {}) },
        headers,
        bodyDigest: proxyBodyDigest(body),
      }),
    );

    return tracer.startActiveSpan(
      `nango.proxy ${args.method}`,
      {
        attributes: {
          'http.request.method': args.method,
          // The endpoint without its query: a query string may carry a credential.
          'switchboard.proxy.endpoint': args.endpoint.split('?')[0]!.slice(0, 512),
          'switchboard.provider_config_key': target.providerConfigKey,
        },
      },
      async (span) => {
        try {
          let response: Dispatcher.ResponseData;
          try {
            response = await this.pool.request({
              path,
              method: args.method,
              headers,
              body,
              signal,
            });
          } catch (error) {
            if (signal.aborted) throw new HostCallError('script_aborted', 'the run ended during the call');
            throw new HostCallError('service_unavailable', 'the proxy service is not available');
          }
          span.setAttribute('http.response.status_code', response.statusCode);
          const code = response.headers[PROXY_INTERNAL_HEADERS.errorCode];
          if (typeof code === 'string') {
            const reply = (await response.body.json().catch(() => undefined)) as
              | { error?: { message?: string } }
              | undefined;
            span.setAttribute('switchboard.error_code', code);
            span.setStatus({ code: SpanStatusCode.ERROR });
            throw new HostCallError(code, reply?.error?.message ?? code);
          }
          if (response.statusCode >= 400) span.setStatus({ code: SpanStatusCode.ERROR });
          const bytes = await readCapped(response, this.env.FUNCTIONS_PROXY_RESPONSE_LIMIT_BYTES);
          return decodeAnswer(response, bytes, args.responseType);
        } finally {
          span.end();
        }
      },
    );
  }
}

function withoutRaw(credentials: CandidateConnection['credentials']): CandidateConnection['credentials'] {
  const { raw: _raw, ...rest } = credentials as CandidateConnection['credentials'] & { raw?: unknown };
  return rest as CandidateConnection['credentials'];
}

function proxyPath(args: ProxyArgs): string {
  const endpoint = args.endpoint.startsWith('/') ? args.endpoint : `/${args.endpoint}`;
  let query = '';
  if (typeof args.params === 'string') query = args.params.replace(/^\?/, '');
  else if (args.params) {
    query = new URLSearchParams(
      Object.entries(args.params).map(([k, v]) => [k, String(v)] as [string, string]),
    ).toString();
  }
  if (!query) return `/proxy${endpoint}`;
  return `/proxy${endpoint}${endpoint.includes('?') ? '&' : '?'}${query}`;
}

function encodeBody(args: ProxyArgs, headers: Record<string, string>): string | Buffer | undefined {
  const body = args.body;
  if (!body) return undefined;
  // The script's own Content-Type (sent as `nango-proxy-content-type`) wins at the proxy.
  const type = (name: string) => {
    headers['content-type'] = headers['nango-proxy-content-type'] ?? name;
  };
  switch (body.kind) {
    case 'json':
      type('application/json');
      return JSON.stringify(body.value);
    case 'text':
      type('text/plain; charset=utf-8');
      return body.value;
    case 'form':
      type('application/x-www-form-urlencoded');
      return body.value;
    case 'base64':
      type('application/octet-stream');
      return Buffer.from(body.value, 'base64');
  }
}

async function readCapped(response: Dispatcher.ResponseData, limit: number): Promise<Buffer> {
  const length = Number(response.headers['content-length']);
  if (Number.isFinite(length) && length > limit) {
    await response.body.dump().catch(() => undefined);
    throw new HostCallError('response_too_large', `the provider's answer is over ${limit} bytes`);
  }
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of response.body) {
    const buffer = chunk as Buffer;
    total += buffer.length;
    if (total > limit) {
      response.body.destroy();
      throw new HostCallError('response_too_large', `the provider's answer is over ${limit} bytes`);
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks);
}

function decodeAnswer(
  response: Dispatcher.ResponseData,
  bytes: Buffer,
  responseType: ProxyArgs['responseType'],
): ProxyAnswer {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers)) {
    if (value === undefined || name.startsWith('x-switchboard-')) continue;
    headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  const answer: ProxyAnswer = { status: response.statusCode, statusText: '', headers };
  if (responseType === 'arraybuffer' || responseType === 'blob' || responseType === 'stream') {
    answer.base64 = bytes.toString('base64');
    return answer;
  }
  const text = bytes.toString('utf8');
  if (responseType === 'text' || responseType === 'document') {
    answer.data = text;
    return answer;
  }
  // axios' default: parse JSON when it is JSON, else hand over the text.
  try {
    answer.data = text === '' ? '' : (JSON.parse(text) as unknown);
  } catch {
    answer.data = text;
  }
  return answer;
}
