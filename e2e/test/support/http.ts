/** Raw HTTP against the gateway (Node's fetch), for what the official client cannot send. */
export interface ApiResponse {
  status: number;
  headers: Headers;
  text: string;
  body: unknown;
}

export interface CallOptions {
  /** A secret key sent as `Authorization: Bearer <key>`; omit to send no Authorization header. */
  key?: string;
  headers?: Record<string, string>;
  /** An object is sent as JSON; a string is sent as is (with `Content-Type: application/json` unless overridden). */
  body?: unknown;
}

export async function call(
  baseUrl: string,
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<ApiResponse> {
  const headers: Record<string, string> = {};
  if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  Object.assign(headers, options.headers);
  const body =
    options.body === undefined
      ? undefined
      : typeof options.body === 'string'
        ? options.body
        : JSON.stringify(options.body);
  const res = await fetch(`${baseUrl}${path}`, { method, headers, body });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, text, body: parsed };
}

export interface ErrorDetail {
  code: string;
  message?: string;
  errors?: { code: string; message: string; path: (string | number)[] }[];
}

/**
 * Asserts an error answer: the status, a JSON body that is exactly `{ error: { code, message?, errors? } }`
 * with the given code, and nothing else at the top level. Returns the `error` object.
 */
export function expectError(res: ApiResponse, status: number, code: string): ErrorDetail {
  expect({ status: res.status, body: res.body }).toEqual({
    status,
    body: expect.objectContaining({ error: expect.objectContaining({ code }) }),
  });
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  const body = res.body as { error: ErrorDetail };
  expect(Object.keys(body)).toEqual(['error']);
  for (const key of Object.keys(body.error)) expect(['code', 'message', 'errors']).toContain(key);
  if (body.error.message !== undefined) expect(typeof body.error.message).toBe('string');
  if (body.error.errors !== undefined) {
    expect(body.error.errors.length).toBeGreaterThan(0);
    for (const e of body.error.errors) expect(Object.keys(e).sort()).toEqual(['code', 'message', 'path']);
  }
  return body.error;
}

/** Creates an API key of the stack's environment with exactly these scopes; returns its secret. */
export async function createKey(
  baseUrl: string,
  adminKey: string,
  scopes: string[],
  displayName = 'e2e key',
): Promise<string> {
  const res = await call(baseUrl, 'POST', '/environment/api-keys', {
    key: adminKey,
    body: { display_name: displayName, scopes },
  });
  expect({ status: res.status, body: res.body }).toEqual({ status: 201, body: expect.anything() });
  return (res.body as { data: { secret_key: string } }).data.secret_key;
}

/** Creates a connect session with the secret key (answered 201); returns its token. */
export async function createConnectSession(
  baseUrl: string,
  secretKey: string,
  body: Record<string, unknown>,
): Promise<string> {
  const res = await call(baseUrl, 'POST', '/connect/sessions', { key: secretKey, body });
  expect({ status: res.status, body: res.body }).toEqual({ status: 201, body: expect.anything() });
  return (res.body as { data: { token: string } }).data.token;
}

/** `path` with a connect session token in its query, as the connect UI sends it. */
export const withSessionToken = (path: string, token: string) =>
  `${path}${path.includes('?') ? '&' : '?'}connect_session_token=${encodeURIComponent(token)}`;

/** What the official client throws for a non-2xx answer (an AxiosError): the status and the body. */
export async function failure(promise: Promise<unknown>): Promise<{ status: number; data: unknown }> {
  try {
    await promise;
  } catch (error) {
    const response = (error as { response?: { status: number; data: unknown } }).response;
    if (response) return { status: response.status, data: response.data };
    throw error;
  }
  throw new Error('expected the call to fail');
}

/**
 * The cookies one browser keeps (name → value), taken from responses and sent back as a `Cookie` header,
 * the way a browser carries the OAuth flow's nonce cookie from the start to the callback. Paths are not
 * modelled: tests only send the jar where the cookie's path would match.
 */
export class CookieJar {
  private readonly cookies = new Map<string, string>();

  take(res: Response): this {
    for (const line of res.headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';');
      const index = pair.indexOf('=');
      const name = pair.slice(0, index).trim();
      const expired = attributes.some((a) => /^\s*max-age=0\s*$/i.test(a));
      if (expired) this.cookies.delete(name);
      else this.cookies.set(name, pair.slice(index + 1).trim());
    }
    return this;
  }

  get size(): number {
    return this.cookies.size;
  }

  headers(): Record<string, string> {
    if (this.cookies.size === 0) return {};
    return { cookie: [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ') };
  }
}
