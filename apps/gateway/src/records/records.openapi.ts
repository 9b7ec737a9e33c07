import {
  listRecordsQuerySchema,
  listRecordsResponseSchema,
  pruneRecordsBodySchema,
  pruneRecordsResponseSchema,
  connectionHeadersSchema,
} from '@switchboard/contracts';
import { json, type DocumentedRoute } from '../openapi/documented-route';

const unknownConnection = {
  400: 'Invalid query, body or headers (`invalid_query_params`, `invalid_body`, `invalid_headers`), or no such connection (`unknown_connection`, 400 as Nango answers it here)',
};

/** `listRecords` and `pruneRecords` (the client calls `/records/`; the trailing slash is ignored). */
export const RECORDS_DOCUMENTED_ROUTES: DocumentedRoute[] = [
  {
    method: 'get',
    path: '/records',
    summary:
      "A page of the records a connection's syncs saved for a model (and variant), ordered by last modification; `next_cursor` continues it. `filter` keeps added, updated or deleted records (Nango's combinations included); `modified_after`/`delta` must be within the last 12 months",
    scope: 'environment:records:read',
    request: { headers: connectionHeadersSchema, query: listRecordsQuerySchema },
    ok: { status: 200, schema: listRecordsResponseSchema, description: 'Records with `_nango_metadata`' },
    errors: {
      ...unknownConnection,
      500: 'A cursor that cannot be read (`server_error`, as Nango answers it)',
    },
  },
  {
    method: 'patch',
    path: '/records/prune',
    summary:
      'Empty the payload of records up to and including `until_cursor` (at most `limit`, 1000 by default); their cursors stay valid. `has_more` says whether to call again',
    scope: 'environment:records:write',
    request: { headers: connectionHeadersSchema, body: json(pruneRecordsBodySchema) },
    ok: { status: 200, schema: pruneRecordsResponseSchema, description: 'How many records were pruned' },
    errors: unknownConnection,
  },
];
