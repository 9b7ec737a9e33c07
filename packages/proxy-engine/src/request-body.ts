import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';

/**
 * The caller's request body, held in memory when it is small (so a retry, a post-refresh retry or a
 * signature over form fields can use it) and streamed through untouched when it is larger.
 */
export type RequestBody =
  | { kind: 'none' }
  | { kind: 'buffer'; data: Buffer }
  | { kind: 'stream'; stream: Readable; length: number | undefined };

export function hasBody(headers: IncomingHttpHeaders): boolean {
  const length = headers['content-length'];
  if (length !== undefined) return Number(length) > 0;
  return headers['transfer-encoding'] !== undefined;
}

/**
 * Reads at most `limit` bytes. If the body ends within them it is returned whole; otherwise what was
 * read and the rest of the request are stitched into one stream, so nothing is buffered beyond the limit.
 */
export async function readRequestBody(req: IncomingMessage, limit: number): Promise<RequestBody> {
  if (!hasBody(req.headers)) return { kind: 'none' };
  const declared =
    req.headers['content-length'] !== undefined ? Number(req.headers['content-length']) : undefined;
  if (declared !== undefined && declared > limit) return { kind: 'stream', stream: req, length: declared };

  const iterator = req[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const chunks: Buffer[] = [];
  let size = 0;
  for (;;) {
    const next = await iterator.next();
    if (next.done)
      return { kind: 'buffer', data: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) };
    chunks.push(next.value);
    size += next.value.length;
    if (size > limit) {
      const rest = async function* (): AsyncGenerator<Buffer> {
        yield* chunks;
        for (;;) {
          const more = await iterator.next();
          if (more.done) return;
          yield more.value;
        }
      };
      return { kind: 'stream', stream: Readable.from(rest(), { objectMode: false }), length: declared };
    }
  }
}
