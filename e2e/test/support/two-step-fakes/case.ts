import type { IncomingHttpHeaders } from 'node:http';

/** Lifetime of the tokens the fake issues (and of the shortened fixed lifetimes), in seconds. */
export const TWO_STEP_TTL_SECONDS = 4;

/** Where a provider's API expects the token: a header (with its scheme, if any) or a query parameter. */
export type TokenPlacement = { header: string; prefix: string } | { query: string };
export const bearer: TokenPlacement = { header: 'authorization', prefix: 'Bearer ' };
export const header = (name: string, prefix = ''): TokenPlacement => ({ header: name, prefix });

export type TokenBody = { form: Record<string, string> } | { json: Record<string, unknown> } | undefined;

export interface TwoStepCase {
  provider: string;
  /** Connection config as typed on the connect page. */
  params: Record<string, string>;
  /** The form's credential fields. */
  credentials: Record<string, string>;
  /** The provider's real origins for these params: a proxy host that ignores them is caught here. */
  origins: { token: string; api: string };
  token: {
    method: 'POST' | 'GET' | 'PUT';
    path: string;
    query?: Record<string, string>;
    /** Headers the token call must carry (others may ride along). */
    headers?: Record<string, string>;
    body: TokenBody;
    answer: (token: string, ttlSeconds: number) => Record<string, unknown>;
  };
  /**
   * A GET on the provider's API and what it must carry besides the token. (A catalog `accept` is a
   * default the caller's own Accept replaces, so it is not listed.)
   */
  api: {
    path: string;
    token: TokenPlacement;
    headers?: Record<string, string>;
    query?: Record<string, string>;
  };
  /**
   * How the token's end is known: the token answer says (`answer`), the catalog's fixed lifetime
   * (`fixed`, shortened here), or it lasts until revoked (`none`).
   */
  expiry: 'answer' | 'fixed' | 'none';
}

/** One request the fake received, as the comparisons read it. */
export interface RecordedCall {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  body: TokenBody;
}

/** Small functions the rows are written with. */
export const basic = (user: string, pass: string) =>
  `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
export const inSeconds = (ttl: number) => new Date(Date.now() + ttl * 1000).toISOString();
export const oauth = (t: string, ttl: number) => ({ access_token: t, token_type: 'Bearer', expires_in: ttl });
export const JSON_ACCEPT = { accept: 'application/json' };
