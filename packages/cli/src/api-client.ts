/** A minimal client of the public API for the CLI (the same routes a customer backend calls). */
export class ApiClient {
  constructor(
    private readonly host: string,
    private readonly secretKey: string,
  ) {}

  async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await fetch(`${this.host.replace(/\/$/, '')}${path}`, {
      method,
      headers: {
        Authorization: `Bearer ${this.secretKey}`,
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    const parsed: unknown = text ? JSON.parse(text) : undefined;
    if (!res.ok) {
      const error = (parsed as { error?: { code?: string; message?: string; errors?: unknown[] } })?.error;
      const details = error?.errors?.length ? ` ${JSON.stringify(error.errors)}` : '';
      throw new Error(`${res.status} ${error?.code ?? 'error'}: ${error?.message ?? text}${details}`);
    }
    return parsed as T;
  }
}
