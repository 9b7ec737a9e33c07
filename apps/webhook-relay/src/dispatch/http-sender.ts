import { EgressRefusedError, egressConnector, type EgressPolicy } from '@switchboard/egress';
import { Agent, request } from 'undici';

export type SendOutcome =
  | { kind: 'response'; status: number; retryAfter: string | undefined; durationMs: number }
  | { kind: 'network_error'; error: string; durationMs: number }
  | { kind: 'timeout'; durationMs: number }
  | { kind: 'refused'; error: string; durationMs: number };

/**
 * POSTs deliveries over keep-alive connections (undici, one pool per origin). The egress connector
 * resolves the host, refuses the connection when any address it resolves to is outside the policy and
 * connects to the checked address, so DNS cannot smuggle a delivery into a private network; redirects
 * are not followed (a 3xx is a failed attempt).
 */
export class HttpSender {
  private readonly agent: Agent;
  /**
   * The policy's verdict on each URL (it depends on the URL's text and the policy's fixed configuration
   * only; addresses are judged by the connector at connect time): a receiver's URL is parsed once, not on
   * every attempt.
   */
  private readonly verdicts = new Map<string, string | undefined>();

  constructor(
    private readonly egress: EgressPolicy,
    private readonly timeoutMs: number,
  ) {
    this.agent = new Agent({
      keepAliveTimeout: 30_000,
      connections: 64,
      connect: egressConnector({ policy: egress, connectTimeoutMs: Math.min(timeoutMs, 10_000) }),
    });
  }

  async send(url: string, body: string, headers: Record<string, string>): Promise<SendOutcome> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const problem = this.urlProblem(url);
    if (problem) return { kind: 'refused', error: `egress refused: the URL ${problem}`, durationMs: 0 };
    // The attempt's whole budget. Not `AbortSignal.timeout`: its timer cannot be cleared, so every attempt
    // left one behind that fired (and built a DOMException) long after the answer had come.
    const deadline = new AbortController();
    const timer = setTimeout(
      () => deadline.abort(new DOMException('The attempt timed out', 'TimeoutError')),
      this.timeoutMs,
    );
    timer.unref();
    try {
      const response = await request(url, {
        method: 'POST',
        headers,
        body,
        dispatcher: this.agent,
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
        signal: deadline.signal,
      });
      // The receiver's answer body is not needed; reading it frees the connection for reuse.
      await response.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
      const retryAfter = response.headers['retry-after'];
      return {
        kind: 'response',
        status: response.statusCode,
        retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
        durationMs: elapsed(),
      };
    } catch (error) {
      const err = error as Error & { code?: string; cause?: Error & { code?: string } };
      if (err instanceof EgressRefusedError || err.cause instanceof EgressRefusedError) {
        return { kind: 'refused', error: (err.cause ?? err).message, durationMs: elapsed() };
      }
      const code = err.code ?? err.cause?.code;
      if (
        err.name === 'TimeoutError' ||
        code === 'UND_ERR_HEADERS_TIMEOUT' ||
        code === 'UND_ERR_BODY_TIMEOUT' ||
        code === 'UND_ERR_CONNECT_TIMEOUT'
      ) {
        return { kind: 'timeout', durationMs: elapsed() };
      }
      return {
        kind: 'network_error',
        error: code ? `${code}` : err.message || 'network error',
        durationMs: elapsed(),
      };
    } finally {
      clearTimeout(timer);
    }
  }

  private urlProblem(url: string): string | undefined {
    if (this.verdicts.has(url)) return this.verdicts.get(url);
    const problem = this.egress.urlProblem(url);
    if (this.verdicts.size >= 10_000) this.verdicts.clear();
    this.verdicts.set(url, problem);
    return problem;
  }

  async close(): Promise<void> {
    await this.agent.close().catch(() => undefined);
  }
}
