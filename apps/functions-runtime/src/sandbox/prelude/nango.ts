import type { RunAbortSignal } from './abort-signal';
import { Buffer, meta, part } from './context';
import { ActionError } from './failures';
import { responseOf } from './fetch-response';
import { log, setLogLevel } from './globals';
import { call } from './host-calls';
import type { RunMeta, ScriptValue } from './isolate';
import { levelOf } from './log-format';
import { createPaginate } from './pagination';
import { plainData } from './plain-data';
import { proxy } from './proxy';

/** The `nango` object a run's handler gets: Nango's script API over the host calls. */
export function makeNango(abortSignal: RunAbortSignal): ScriptValue {
  const m = meta();
  const nango: ScriptValue = {
    connectionId: m.connectionId,
    providerConfigKey: m.providerConfigKey,
    provider: m.provider,
    activityLogId: m.invocationId,
    abortSignal,
    ActionError,
    proxy,
    get: (c: object) => proxy(Object.assign({}, c, { method: 'GET' })),
    post: (c: object) => proxy(Object.assign({}, c, { method: 'POST' })),
    put: (c: object) => proxy(Object.assign({}, c, { method: 'PUT' })),
    patch: (c: object) => proxy(Object.assign({}, c, { method: 'PATCH' })),
    delete: (c: object) => proxy(Object.assign({}, c, { method: 'DELETE' })),
    paginate: createPaginate({
      proxy,
      providerDefaults: () => call('paginateDefaults', {}),
      URL: () => part('URL'),
    }),
    getConnection: (providerConfigKey: string, connectionId: string) =>
      call('getConnection', { providerConfigKey, connectionId }),
    getToken: () => call('getToken', {}),
    getMetadata: () => call('getMetadata', {}),
    // Nango's node client takes (providerConfigKey, connectionId, metadata); scripts pass only metadata.
    // A connection named anyway must be the run's own (the host checks).
    setMetadata: (metadata: unknown, connectionId?: string, providerConfigKey?: string) =>
      call('setMetadata', { metadata, connectionId, providerConfigKey }),
    updateMetadata: (metadata: unknown, connectionId?: string, providerConfigKey?: string) =>
      call('updateMetadata', { metadata, connectionId, providerConfigKey }),
    getEnvironmentVariables: () => call('getEnvironmentVariables', {}),
    getWebhookURL: () => call('getWebhookURL', {}),
    log: async (...args: unknown[]) => {
      const [level, rest] = levelOf(args);
      log(level, rest);
    },
    triggerAction: (providerConfigKey: string, connectionId: string, actionName: string, input: unknown) =>
      call('triggerAction', { providerConfigKey, connectionId, actionName, input }),
    triggerSync: async (
      providerConfigKey: string,
      connectionId: string,
      sync: unknown,
      syncMode: unknown,
    ) => {
      await call('triggerSync', { providerConfigKey, connectionId, sync, syncMode });
    },
    startSync: async (providerConfigKey: string, syncs: unknown, connectionId?: string) => {
      await call('startSync', { providerConfigKey, syncs, connectionId });
    },
    // Deprecated in Nango: the metadata's fieldMapping, and a metadata write.
    getFieldMapping: async () => {
      const metadata = await call('getMetadata', {});
      return (metadata && metadata.fieldMapping) || {};
    },
    setFieldMapping: (fieldMapping: unknown) => call('setMetadata', { metadata: fieldMapping }),
    setLogger: (logger: ScriptValue) => setLogLevel(logger && logger.level),
    getFlowAttributes: () =>
      m.attributes && Object.keys(m.attributes).length > 0 ? JSON.parse(JSON.stringify(m.attributes)) : null,
    getIntegration: (queries: ScriptValue) => {
      const include = queries && queries.include;
      return call('getIntegration', {
        include: include === undefined ? [] : Array.isArray(include) ? include : [include],
      });
    },
    uncontrolledFetch,
    tryAcquireLock: (options: ScriptValue) =>
      call('tryAcquireLock', { key: options && options.key, ttlMs: options && options.ttlMs }),
    releaseLock: (options: ScriptValue) => call('releaseLock', { key: options && options.key }),
    releaseAllLocks: async () => {
      await call('releaseAllLocks', {});
    },
    getCheckpoint: () => call('getCheckpoint', {}),
    saveCheckpoint: (checkpoint: unknown) => call('saveCheckpoint', { checkpoint }),
    clearCheckpoint: () => call('clearCheckpoint', {}),
    zodValidateInput,
  };
  if (m.type === 'sync') Object.assign(nango, syncCalls(m));
  return nango;
}

/** A request to any URL without the connection's credentials (the host applies the egress policy). */
async function uncontrolledFetch(options: ScriptValue) {
  if (!options || typeof options !== 'object' || options.url === undefined) {
    throw new TypeError('uncontrolledFetch needs { url }');
  }
  const body = options.body;
  if (body !== undefined && body !== null && typeof body !== 'string') {
    throw new TypeError('uncontrolledFetch: body must be a string');
  }
  const reply = await call('uncontrolledFetch', {
    url: String(options.url),
    method: String(options.method || 'GET').toUpperCase(),
    headers: options.headers || {},
    body: body === undefined ? null : body,
  });
  return responseOf(reply, (base64) => Buffer().from(base64, 'base64'));
}

/** An action's input checked by its zod schema; a refusal is an ActionError with the issues. */
async function zodValidateInput({ zodSchema, input }: ScriptValue) {
  const result = zodSchema.safeParse(input);
  if (result.success) return result;
  throw new ActionError({
    message: 'Invalid input provided',
    issues: JSON.parse(JSON.stringify(result.error.issues)),
  });
}

const isFiniteNumber = Number.isFinite;

/** Whether a record's id is one Nango accepts: a non-empty string or a finite number. */
export function hasRecordId(record: unknown): boolean {
  const id: unknown =
    record !== null && typeof record === 'object' ? (record as { id?: unknown }).id : undefined;
  return (typeof id === 'string' && id !== '') || (typeof id === 'number' && isFiniteNumber(id));
}

// Records calls: the host checks the model against the sync's declared ones and scopes everything by the
// run; here the batch is checked (a clear error before anything is sent) and cut in chunks of BATCH.
const BATCH = 1000;

function checkModel(name: string, model: unknown): asserts model is string {
  if (typeof model !== 'string' || model === '') {
    throw new TypeError('nango.' + name + ' needs the model name as its last argument');
  }
}

/** batchSave, batchUpdate, batchDelete: every record checked first, then sent in chunks of BATCH. */
async function writeRecords(name: string, records: unknown, model: unknown): Promise<boolean> {
  checkModel(name, model);
  if (!Array.isArray(records)) throw new TypeError('nango.' + name + ' needs an array of records');
  // Per chunk of BATCH: whether all its records are plain data (one odd record sends its chunk as text).
  const asData: boolean[] = [];
  for (let i = 0; i < records.length; i++) {
    const record: unknown = records[i];
    if (!hasRecordId(record)) {
      throw new TypeError(
        'nango.' +
          name +
          ': record ' +
          i +
          ' of model "' +
          model +
          '" has no id; every record needs an "id" (a non-empty string or a number)',
      );
    }
    const chunk = (i / BATCH) | 0;
    if (asData[chunk] !== false) asData[chunk] = plainData(record, 0);
  }
  for (let i = 0; i < records.length; i += BATCH) {
    await call(name, { model, records: records.slice(i, i + BATCH) }, asData[(i / BATCH) | 0]);
  }
  return true;
}

/** getRecordsByIds: a Map keyed by the ids as the script gave them. */
async function getRecordsByIds(ids: unknown, model: unknown): Promise<Map<unknown, unknown>> {
  checkModel('getRecordsByIds', model);
  if (!Array.isArray(ids)) throw new TypeError('nango.getRecordsByIds needs an array of ids');
  const found = new Map<unknown, unknown>();
  for (let i = 0; i < ids.length; i += 100) {
    // Keyed by the ids as the script gave them (numbers stay numbers), as Nango's Map is.
    const asGiven = new Map<string, unknown>(ids.slice(i, i + 100).map((id: unknown) => [String(id), id]));
    const records: { id: string }[] = await call('getRecordsByIds', {
      model,
      ids: Array.from(asGiven.keys()),
    });
    for (const record of records) {
      if (asGiven.has(record.id)) found.set(asGiven.get(record.id), record);
    }
  }
  return found;
}

/** A sync's own calls: its variant, last sync date and the records calls. */
function syncCalls(m: RunMeta): ScriptValue {
  const variant = m.variant;
  const batchSave = (records: unknown, model: unknown) => writeRecords('batchSave', records, model);
  // Nango's two forms: listRecords({ model, cursor?, limit? }) → { records, next_cursor } (a page), and
  // the SDK's listRecords(model, { cursor? }), an async generator over every record from the cursor on.
  const listPage = async (model: unknown, cursor: unknown, limit: unknown) => {
    checkModel('listRecords', model);
    return call('listRecords', { model, cursor: cursor || null, limit: limit === undefined ? 100 : limit });
  };
  const deleteUnseen = async (name: string, model: unknown) => {
    checkModel(name, model);
    const { deletedKeys } = await call(name, { model });
    return { deletedKeys };
  };
  return {
    variant,
    lastSyncDate: m.lastSyncDate ? new Date(m.lastSyncDate) : undefined,
    modelFullName: (model: string) => (variant === 'base' ? model : model + '::' + variant),
    batchSave,
    // Deprecated in Nango, same as batchSave.
    batchSend: batchSave,
    batchUpdate: (records: unknown, model: unknown) => writeRecords('batchUpdate', records, model),
    batchDelete: (records: unknown, model: unknown) => writeRecords('batchDelete', records, model),
    getRecordsByIds,
    listRecords: (modelOrOptions: ScriptValue, options?: ScriptValue) => {
      if (modelOrOptions && typeof modelOrOptions === 'object') {
        return listPage(modelOrOptions.model, modelOrOptions.cursor, modelOrOptions.limit);
      }
      return (async function* () {
        let cursor: unknown = options && options.cursor;
        for (;;) {
          const page = await listPage(modelOrOptions, cursor, 100);
          for (const record of page.records) yield record;
          if (!page.next_cursor) return;
          cursor = page.next_cursor;
        }
      })();
    },
    trackDeletesStart: async (model: unknown) => {
      checkModel('trackDeletesStart', model);
      await call('trackDeletesStart', { model });
    },
    trackDeletesEnd: (model: unknown) => deleteUnseen('trackDeletesEnd', model),
    deleteRecordsFromPreviousExecutions: (model: unknown) =>
      deleteUnseen('deleteRecordsFromPreviousExecutions', model),
    setMergingStrategy: async (merging: ScriptValue, model: unknown) => {
      checkModel('setMergingStrategy', model);
      await call('setMergingStrategy', { model, strategy: merging && merging.strategy });
    },
  };
}
