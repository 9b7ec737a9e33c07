import { Readable } from 'node:stream';
import { Body, Controller, Get, Header, Patch, Query, StreamableFile, UseFilters } from '@nestjs/common';
import {
  listRecordsQuerySchema,
  pruneRecordsBodySchema,
  recordModelKey,
  RECORDS_SUBJECTS,
  type Caller as CallerType,
  type PruneRecordsResponse,
  type RecordsListReply,
  type RecordsListRequest,
  RECORDS_REQUESTS,
} from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import { Caller } from '../access/caller.decorator';
import { RequireScope } from '../access/route-access';
import { CodeStatusFilter } from '../http/code-status.filter';
import { ConnectionHeadersDto } from '../http/connection-headers';
import { NoQuery, RequestHeaders } from '../http/validation';
import { createZodDto } from 'nestjs-zod';

class ListRecordsQueryDto extends createZodDto(listRecordsQuerySchema) {}
class PruneRecordsBodyDto extends createZodDto(pruneRecordsBodySchema) {}

const RECORDS_OPEN = Buffer.from('{"records":[');
const COMMA = Buffer.from(',');

/**
 * The records a connection's syncs saved (`listRecords`, `pruneRecords`). The client calls `/records/`
 * with a trailing slash; the server ignores trailing slashes. Records are read from sync-orchestrator one
 * message-sized page at a time and joined here up to `limit`, as bytes: each page's body (the records'
 * JSON, comma-joined) is written into the answer as it came, never decoded, parsed nor serialised again
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
    @RequestHeaders() h: ConnectionHeadersDto,
    @Query() q: ListRecordsQueryDto,
  ): Promise<StreamableFile> {
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
    const parts: Uint8Array[] = [RECORDS_OPEN];
    let count = 0;
    let cursor = q.cursor;
    for (let first = true; ; first = false) {
      const page = await this.nats.requestRaw<RecordsListReply>(RECORDS_SUBJECTS.list, {
        ...request,
        limit: q.limit - count,
        ...(cursor ? { cursor } : {}),
        // The connection is checked once, with the first page.
        checkConnection: first,
      });
      if (page.meta.count > 0) {
        if (count > 0) parts.push(COMMA);
        parts.push(page.body);
      }
      count += page.meta.count;
      const next = page.meta.next_cursor;
      if (!next || count >= q.limit) {
        // The shape of ListRecordsResponse, written out: {records, next_cursor}. The parts go to the socket
        // as they are, with the content-length of their sum: joining them first copied every page once more
        // and that garbage kept the gateway collecting (bench/README.md, Records).
        parts.push(Buffer.from(`],"next_cursor":${JSON.stringify(next)}}`));
        let length = 0;
        for (const part of parts) length += part.length;
        return new StreamableFile(Readable.from(parts), { length });
      }
      cursor = next;
    }
  }

  @Patch('prune')
  @RequireScope('environment:records:write')
  async prune(
    @Caller() caller: CallerType,
    @RequestHeaders() h: ConnectionHeadersDto,
    @Body() b: PruneRecordsBodyDto,
    @Query() _query: NoQuery,
  ): Promise<PruneRecordsResponse> {
    return this.nats.call(RECORDS_REQUESTS.prune, {
      caller,
      providerConfigKey: h['provider-config-key'],
      connectionId: h['connection-id'],
      model: recordModelKey(b.model, b.variant),
      untilCursor: b.until_cursor,
      limit: b.limit ?? 1000,
    });
  }
}
