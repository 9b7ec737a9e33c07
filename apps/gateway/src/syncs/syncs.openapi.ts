import {
  syncFrequencyBodySchema,
  syncFrequencyResponseSchema,
  syncPauseStartBodySchema,
  syncStatusQuerySchema,
  syncStatusResponseSchema,
  syncSuccessSchema,
  syncTriggerBodySchema,
  syncVariantBodySchema,
  syncVariantParamsSchema,
  syncVariantResponseSchema,
} from '@switchboard/contracts';
import { json, type DocumentedRoute } from '../openapi/documented-route';

/** Sync control (Nango's `/sync/*`). */
export const SYNCS_DOCUMENTED_ROUTES: DocumentedRoute[] = [
  {
    method: 'post',
    path: '/sync/trigger',
    summary:
      'Run syncs now: `syncs` as names, `name::variant` or `{name, variant}` (none: all), for one connection or (no `connection_id`) all of the integration. `opts.reset` (or `sync_mode` full_refresh) clears the checkpoint and lastSyncDate first; `opts.emptyCache` (or `full_refresh_and_clear_cache`) deletes the records. `provider_config_key` / `connection_id` may come in the `Provider-Config-Key` / `Connection-Id` headers',
    scope: 'environment:syncs:update',
    request: { body: json(syncTriggerBodySchema) },
    ok: { status: 200, schema: syncSuccessSchema, description: 'Triggered' },
    errors: {
      400: 'Invalid body (`opts` with `sync_mode`), `missing_provider_config_key`, `no_syncs_found`, `unknown_connection`',
    },
  },
  {
    method: 'post',
    path: '/sync/pause',
    summary: 'Pause the schedules of syncs (a run in progress finishes)',
    scope: 'environment:syncs:update',
    request: { body: json(syncPauseStartBodySchema) },
    ok: { status: 200, schema: syncSuccessSchema, description: 'Paused' },
  },
  {
    method: 'post',
    path: '/sync/start',
    summary: 'Resume paused schedules; a resumed sync runs at once, an already started one is left alone',
    scope: 'environment:syncs:update',
    request: { body: json(syncPauseStartBodySchema) },
    ok: { status: 200, schema: syncSuccessSchema, description: 'Started' },
  },
  {
    method: 'get',
    path: '/sync/status',
    summary:
      'Status of syncs (`syncs=*` or a comma list): RUNNING, SUCCESS, ERROR, PAUSED or STOPPED, the next scheduled run, frequency, latest result, record counts and checkpoint',
    scope: 'environment:syncs:read',
    request: { query: syncStatusQuerySchema },
    ok: { status: 200, schema: syncStatusResponseSchema, description: 'One item per sync and connection' },
  },
  {
    method: 'put',
    path: '/sync/update-connection-frequency',
    summary:
      "Override a sync's frequency for one connection (at least 30 s); `null` reverts to the script's `runs`. Answers the normalised interval (`every hour` → `1h`), or the raw `runs` on revert",
    scope: 'environment:syncs:update',
    request: { body: json(syncFrequencyBodySchema) },
    ok: { status: 200, schema: syncFrequencyResponseSchema, description: 'The frequency now in force' },
    errors: { 400: '`invalid_body` ("Sync interval is invalid"), `unknown_sync`, `unknown_connection`' },
  },
  {
    method: 'post',
    path: '/sync/{name}/variant/{variant}',
    summary:
      'Create a variant of a sync on a connection (its records are stored under `Model::variant`), scheduled at once. `base` is reserved; at most 100 variants per sync',
    scope: 'environment:syncs:update',
    request: { params: syncVariantParamsSchema, body: json(syncVariantBodySchema) },
    ok: { status: 200, schema: syncVariantResponseSchema, description: 'The new variant' },
    errors: {
      400: '`invalid_variant`, `sync_variant_already_exists`, `resource_capped`, `unknown_sync`, `unknown_connection`',
    },
  },
  {
    method: 'delete',
    path: '/sync/{name}/variant/{variant}',
    summary: 'Delete a variant of a sync (its schedule, checkpoint and records); the body is JSON',
    scope: 'environment:syncs:update',
    request: { params: syncVariantParamsSchema, body: json(syncVariantBodySchema) },
    ok: { status: 200, schema: syncSuccessSchema, description: 'Deleted' },
    errors: { 400: '`invalid_variant`, `unknown_sync`, `unknown_connection`' },
  },
];
