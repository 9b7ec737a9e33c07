import { writeFileSync } from 'node:fs';

/**
 * A minimal Chrome DevTools Protocol client for a service started with `--inspect=127.0.0.1:0` (the bench
 * passes it in `NODE_OPTIONS`): evaluates expressions in its main context, forces a full garbage
 * collection and writes heap snapshots. Bench-only: no service opens an inspector by itself.
 */
export class Inspector {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private chunks: string[] = [];

  private constructor(private readonly ws: WebSocket) {
    ws.addEventListener('message', (event) => {
      const msg = JSON.parse(String(event.data)) as {
        id?: number;
        method?: string;
        params?: { chunk?: string };
        result?: unknown;
        error?: { message: string };
      };
      if (msg.method === 'HeapProfiler.addHeapSnapshotChunk') {
        this.chunks.push(msg.params?.chunk ?? '');
        return;
      }
      const waiting = msg.id === undefined ? undefined : this.pending.get(msg.id);
      if (!waiting) return;
      this.pending.delete(msg.id!);
      if (msg.error) waiting.reject(new Error(msg.error.message));
      else waiting.resolve(msg.result);
    });
  }

  /** The inspector URL a process printed (`Debugger listening on ws://...`), once it has. */
  static urlIn(output: string): string | undefined {
    return /Debugger listening on (ws:\/\/\S+)/.exec(output)?.[1];
  }

  static async connect(url: string): Promise<Inspector> {
    const ws = new WebSocket(url);
    await new Promise<void>((resolve, reject) => {
      ws.addEventListener('open', () => resolve(), { once: true });
      ws.addEventListener('error', () => reject(new Error(`cannot reach the inspector at ${url}`)), {
        once: true,
      });
    });
    return new Inspector(ws);
  }

  send(method: string, params: Record<string, unknown> = {}): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }

  /** The value of a JavaScript expression evaluated in the process (returned by value: JSON-able). */
  async evaluate<T>(expression: string): Promise<T> {
    const result = (await this.send('Runtime.evaluate', {
      expression,
      returnByValue: true,
      awaitPromise: true,
    })) as { result: { value: T }; exceptionDetails?: { text: string } };
    if (result.exceptionDetails) throw new Error(`evaluate: ${result.exceptionDetails.text}`);
    return result.result.value;
  }

  /** A full (mark-compact) collection of the process's main V8 heap. */
  async collectGarbage(): Promise<void> {
    await this.send('HeapProfiler.collectGarbage');
  }

  /**
   * Starts V8's sampling heap profiler. With `majorGcGarbage`, objects the young generation's collections
   * freed are left out and those freed by a full collection are kept: what survived into old space.
   */
  async startAllocationSampling(majorGcGarbage: boolean): Promise<void> {
    await this.send('HeapProfiler.startSampling', {
      samplingInterval: 4096,
      includeObjectsCollectedByMajorGC: majorGcGarbage,
      includeObjectsCollectedByMinorGC: false,
    });
  }

  /** Stops the sampling heap profiler and writes its profile (a `.heapprofile` for DevTools). */
  async stopAllocationSampling(path: string): Promise<void> {
    const { profile } = (await this.send('HeapProfiler.stopSampling')) as { profile: unknown };
    writeFileSync(path, JSON.stringify(profile));
  }

  /** Writes a heap snapshot of the main V8 heap (open it in Chrome's DevTools, Memory tab). */
  async heapSnapshot(path: string): Promise<void> {
    this.chunks = [];
    await this.send('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
    writeFileSync(path, this.chunks.join(''));
    this.chunks = [];
  }

  close(): void {
    this.ws.close();
  }
}
