/**
 * The GET phase's HTTP client, in a process of its own (forked by path-get.ts), as a customer's backend
 * would be: the bench process holds the store phase's rows, a Prisma client and the stack's logs, and its
 * collections of that heap landed inside the page timings. The parent sends `warm` (pages not counted),
 * then `measure`; each answer goes back over the IPC channel. It exits when the channel closes.
 */
import { Pool } from 'undici';

export interface GetClientStart {
  gatewayUrl: string;
  headers: Record<string, string>;
}
export type GetClientCommand =
  | ({ kind: 'warm'; pages: number } & GetClientStart)
  | { kind: 'measure'; pages: number };
export interface GetClientMeasured {
  kind: 'measured';
  headersMs: number[];
  lastByteMs: number[];
  parsedMs: number[];
  pageBytes: number;
  /** User + system CPU of this process over the measured pages, in microseconds. */
  cpuMicros: number;
}
export type GetClientAnswer = { kind: 'warmed' } | GetClientMeasured | { kind: 'failed'; message: string };

let pool: Pool | undefined;
let headers: Record<string, string> = {};
let cursor: string | null = null;

async function getPage() {
  const started = performance.now();
  const res = await pool!.request({
    method: 'GET',
    path: `/records?model=BenchRecord&limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    headers: { ...headers, 'connection-id': 'bench-1', 'provider-config-key': 'bench' },
  });
  const headersMs = performance.now() - started;
  const bytes = Buffer.from(await res.body.arrayBuffer());
  const lastByteMs = performance.now() - started;
  const body = JSON.parse(bytes.toString('utf8')) as { records: unknown[]; next_cursor: string | null };
  const parsedMs = performance.now() - started;
  if (res.statusCode !== 200 || body.records.length === 0) throw new Error(`GET /records: ${res.statusCode}`);
  // The answer goes out whole, with its length (not chunked).
  if (Number(res.headers['content-length']) !== bytes.length || res.headers['transfer-encoding'])
    throw new Error(
      `GET /records: content-length ${String(res.headers['content-length'])} for ${bytes.length} bytes`,
    );
  // Past the last page: start again from the first.
  cursor = body.next_cursor;
  return { headersMs, lastByteMs, parsedMs, bytes: bytes.length };
}

async function handle(command: GetClientCommand): Promise<GetClientAnswer> {
  switch (command.kind) {
    case 'warm':
      pool = new Pool(command.gatewayUrl, { connections: 1 });
      headers = command.headers;
      for (let i = 0; i < command.pages; i++) await getPage();
      return { kind: 'warmed' };
    case 'measure': {
      const measured: GetClientMeasured = {
        kind: 'measured',
        headersMs: [],
        lastByteMs: [],
        parsedMs: [],
        pageBytes: 0,
        cpuMicros: 0,
      };
      const cpuBefore = process.cpuUsage();
      for (let i = 0; i < command.pages; i++) {
        const page = await getPage();
        measured.headersMs.push(page.headersMs);
        measured.lastByteMs.push(page.lastByteMs);
        measured.parsedMs.push(page.parsedMs);
        measured.pageBytes = page.bytes;
      }
      const cpu = process.cpuUsage(cpuBefore);
      measured.cpuMicros = cpu.user + cpu.system;
      return measured;
    }
  }
}

// The bench closes the channel when done, or by exiting however it exits.
process.on('disconnect', () => process.exit(0));

process.on('message', (command: GetClientCommand) => {
  handle(command).then(
    (answer) => process.send!(answer),
    (error: unknown) =>
      process.send!({ kind: 'failed', message: error instanceof Error ? error.message : String(error) }),
  );
});
