/**
 * Every request of the console goes to the gateway's public API (or `/console/api/*`) on the same origin,
 * authenticated by the HttpOnly session cookie the browser sends by itself. The environment is named by a
 * header, and every write carries the session's CSRF token (the gateway refuses it otherwise).
 */

export interface ApiErrorBody {
  error?: { code?: string; message?: string; errors?: unknown; payload?: unknown };
}

/** An answer other than 2xx, with the API's own code and message (shown to the user as they are). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly traceId: string | null,
    readonly details?: unknown,
    readonly headers?: Headers,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

const state: { csrfToken: string | null; environment: string | null } = {
  csrfToken: null,
  environment: null,
};

export function setCsrfToken(token: string | null): void {
  state.csrfToken = token;
}

export function setEnvironment(name: string | null): void {
  state.environment = name;
}

export function currentEnvironment(): string | null {
  return state.environment;
}

/** Called when the API says the console session is gone (expired, signed out elsewhere). */
let onSessionLost: () => void = () => undefined;
export function whenSessionLost(listener: () => void): void {
  onSessionLost = listener;
}

export interface RequestOptions {
  method?: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  query?: Record<string, string | number | boolean | undefined | null | string[]>;
  body?: unknown;
  headers?: Record<string, string>;
  /** `/console/api/*` routes are not environment-scoped. */
  environment?: boolean;
}

export interface ApiResponse<T> {
  data: T;
  headers: Headers;
  traceId: string | null;
}

/** W3C `traceresponse` (`00-<trace id>-<span id>-<flags>`) when the gateway sends one. */
function traceIdOf(headers: Headers): string | null {
  const value = headers.get('traceresponse') ?? headers.get('traceparent');
  return value ? (value.split('-')[1] ?? null) : null;
}

export function buildUrl(path: string, query?: RequestOptions['query']): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value === undefined || value === null || value === '') continue;
    if (Array.isArray(value)) value.forEach((v) => params.append(key, v));
    else params.set(key, String(value));
  }
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}

export async function request<T>(path: string, options: RequestOptions = {}): Promise<ApiResponse<T>> {
  const method = options.method ?? 'GET';
  const headers: Record<string, string> = { Accept: 'application/json', ...options.headers };
  if (options.environment !== false && state.environment) {
    headers['X-Switchboard-Environment'] = state.environment;
  }
  if (method !== 'GET' && state.csrfToken) headers['X-CSRF-Token'] = state.csrfToken;
  let body: string | undefined;
  if (options.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(options.body);
  }
  const response = await fetch(buildUrl(path, options.query), {
    method,
    headers,
    body,
    credentials: 'same-origin',
  });
  const traceId = traceIdOf(response.headers);
  const text = await response.text();
  let parsed: unknown = null;
  if (text) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
  }
  if (!response.ok) {
    const error = (parsed as ApiErrorBody | null)?.error;
    const code = error?.code ?? `http_${response.status}`;
    const message =
      error?.message ??
      (typeof parsed === 'string' && parsed ? parsed : `The request failed (${response.status})`);
    if (response.status === 401 && code === 'console_session_required') onSessionLost();
    throw new ApiError(
      response.status,
      code,
      message,
      traceId,
      error?.payload ?? error?.errors,
      response.headers,
    );
  }
  return { data: parsed as T, headers: response.headers, traceId };
}

export async function api<T>(path: string, options?: RequestOptions): Promise<T> {
  return (await request<T>(path, options)).data;
}
