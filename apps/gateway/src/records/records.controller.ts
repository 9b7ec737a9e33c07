import { Body, Controller, Get, Headers, Patch, Query, UseFilters } from '@nestjs/common';
import {
  fieldErrorsFromZod,
  listRecordsQuerySchema,
  pruneRecordsBodySchema,
  recordModelKey,
  recordsHeadersSchema,
  RECORDS_SUBJECTS,
  SwitchboardError,
  type Caller as CallerType,
  type ListRecordsResponse,
  type PruneRecordsResponse,
  type RecordsHeaders,
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

/**
 * The records a connection's syncs saved (`listRecords`, `pruneRecords`). The client calls `/records/`
 * with a trailing slash; the server ignores trailing slashes. Records are read from sync-orchestrator one
 * message-sized page at a time and joined here up to `limit`.
 */
@Controller('records')
@UseFilters(new CodeStatusFilter({ unknown_connection: 400 }))
export class RecordsController {
  constructor(private readonly nats: NatsRequester) {}

  @Get()
  @RequireScope('environment:records:read')
  async list(
    @Caller() caller: CallerType,
    @Headers() headers: Record<string, string | string[] | undefined>,
    @Query() query: unknown,
  ): Promise<ListRecordsResponse> {
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
    const records: ListRecordsResponse['records'] = [];
    let cursor = q.cursor;
    for (let first = true; ; first = false) {
      const page = await this.nats.request<ListRecordsResponse>(RECORDS_SUBJECTS.list, {
        ...request,
        limit: q.limit - records.length,
        ...(cursor ? { cursor } : {}),
        // The connection is checked once, with the first page.
        checkConnection: first,
      });
      records.push(...page.records);
      if (!page.next_cursor || records.length >= q.limit) {
        return { records, next_cursor: page.next_cursor };
      }
      cursor = page.next_cursor;
    }
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
