import { Readable } from 'node:stream';
import {
  Body,
  Controller,
  Get,
  Header,
  Headers,
  Patch,
  Query,
  StreamableFile,
  UseFilters,
} from '@nestjs/common';
import {
  fieldErrorsFromZod,
  listRecordsQuerySchema,
  pruneRecordsBodySchema,
  recordModelKey,
  recordsHeadersSchema,
  RECORDS_SUBJECTS,
  SwitchboardError,
  type Caller as CallerType,
  type PruneRecordsResponse,
  type RecordsHeaders,
  type RecordsListReply,
  type RecordsListRequest,
} from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import { z } from 'zod';
import { Caller } from '../access/caller.decorator';
import { RequireScope } from '../access/route-access';
import { CodeStatusFilter } from '../http/code-status.filter';
import { parseBody, parseQuery } from '../http/validation';

const noQuery = z.object({}).strict();

function parseHeaders(headers: Record<string, string | string[] | undefined>): RecordsHeaders {
  const parsed = recordsHeadersSchema.safeParse({
    'connection-id': headers['connection-id'],
    'provider-config-key': headers['provider-config-key'],
  });
  if (!parsed.success) {
    throw new SwitchboardError('invalid_headers', 'Invalid headers', fieldErrorsFromZod(parsed.error));
  }
  return parsed.data;
}

const RECORDS_OPEN = Buffer.from('{"records":[');
const COMMA = Buffer.from(',');

/**
 * The records a connection's syncs saved (`listRecords`, `pruneRecords`). The client calls `/records/`
 * with a trailing slash; the server ignores trailing slashes. Records are read from sync-orchestrator one
 * message-sized page at a time and joined here up to `limit`, as bytes: each page's body (the records'
 * JSON, comma-joined, in several messages) is written into the answer as it comes, never decoded, parsed
 * nor serialised again
 * (a 1000-record page parsed and serialised again cost more CPU than everything else on the route).
 */
@Controller('records')
@UseFilters(new CodeStatusFilter({ unknown_connection: 400 }))
export class RecordsController {
  constructor(private readonly nats: NatsRequester) {}

  @Get()
  @RequireScope('environment:records:read')
  @Header('Content-Type', 'application/json; charset=utf-8')
  async list(
    @Caller() caller: CallerType,
    @Headers() headers: Record<string, string | string[] | undefined>,
    @Query() query: unknown,
  ): Promise<StreamableFile> {
    const q = parseQuery(listRecordsQuerySchema, query);
    const h = parseHeaders(headers);
    const modifiedAfter = q.delta ?? q.modified_after;
    const request: RecordsListRequest = {
      caller,
      providerConfigKey: h['provider-config-key'],
      connectionId: h['connection-id'],
      model: recordModelKey(q.model, q.variant),
      limit: q.limit,
      ...(modifiedAfter ? { modifiedAfter } : {}),
      ...(q.filter ? { filter: q.filter } : {}),
      ...(q.ids ? { ids: q.ids } : {}),
    };
    const pageRequest = (cursor: string | undefined, count: number, first: boolean) =>
      this.nats.requestStream<RecordsListReply>(RECORDS_SUBJECTS.list, {
        ...request,
        limit: q.limit - count,
        ...(cursor ? { cursor } : {}),
        // The connection is checked once, with the first page.
        checkConnection: first,
      });
    // The first page's metadata is awaited here: until it came, an error is still the documented JSON error.
    const firstPage = await pageRequest(q.cursor, 0, true);
    const limit = q.limit;
    async function* body(): AsyncGenerator<Uint8Array> {
      yield RECORDS_OPEN;
      let page = firstPage;
      let count = 0;
      for (;;) {
        if (page.meta.count > 0 && count > 0) yield COMMA;
        for await (const piece of page.body) yield piece;
        count += page.meta.count;
        const next = page.meta.next_cursor;
        if (!next || count >= limit) {
          // The shape of ListRecordsResponse, written out: {records, next_cursor}.
          yield Buffer.from(`],"next_cursor":${JSON.stringify(next)}}`);
          return;
        }
        page = await pageRequest(next, count, false);
      }
    }
    // Chunked: each piece goes to the client as it comes from the orchestrator (the total is not known
    // before the last record is decrypted). A failure after the first bytes destroys the stream, and with
    // it the connection (Fastify destroys the response of a stream that fails after its headers went out):
    // the client sees a broken answer, never a short page that looks whole.
    return new StreamableFile(Readable.from(body(), { objectMode: false }));
  }

  @Patch('prune')
  @RequireScope('environment:records:write')
  async prune(
    @Caller() caller: CallerType,
    @Headers() headers: Record<string, string | string[] | undefined>,
    @Query() query: unknown,
    @Body() body: unknown,
  ): Promise<PruneRecordsResponse> {
    parseQuery(noQuery, query);
    const b = parseBody(pruneRecordsBodySchema, body);
    const h = parseHeaders(headers);
    return this.nats.request<PruneRecordsResponse>(RECORDS_SUBJECTS.prune, {
      caller,
      providerConfigKey: h['provider-config-key'],
      connectionId: h['connection-id'],
      model: recordModelKey(b.model, b.variant),
      untilCursor: b.until_cursor,
      limit: b.limit ?? 1000,
    });
  }
}
