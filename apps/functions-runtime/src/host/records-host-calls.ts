import {
  MAX_RECORD_BYTES,
  RECORDS_BATCH_SIZE,
  recordModelKey,
  recordsMessageBytes,
  type ListRecordsResponse,
  type RecordWriteOp,
  RECORDS_REQUESTS,
} from '@switchboard/contracts';
import type { NatsRequester } from '@switchboard/messaging';
import { z } from 'zod';
import { entry, type HostCall, type RunScope } from './host-call';
import { HostCallError } from './host-call.errors';

const SYNC = ['sync'] as const;
const modelArg = z.string().min(1).max(255);
const batchArgs = z.object({ model: modelArg, records: z.array(z.unknown()).max(RECORDS_BATCH_SIZE) });
const modelArgs = z.object({ model: modelArg });

/** Ids per `getRecordsByIds` host call (the sandbox splits longer lists). */
const IDS_PER_CALL = 100;

/**
 * The full model key of a records call, from the run request: the model must be one the sync declared
 * (a script cannot write or read another model, nor another connection's records: the scope comes from the
 * run, never from the script), and the run's variant is appended.
 */
function modelOf(scope: RunScope, call: string, model: string): string {
  if (!scope.sync) {
    throw new HostCallError('script_forbidden_call', `nango.${call}: this run has no sync context`);
  }
  if (!scope.sync.models.includes(model)) {
    const declared = scope.sync.models.map((m) => `"${m}"`).join(', ') || 'none';
    throw new HostCallError(
      'script_forbidden_call',
      `nango.${call}: "${model}" is not a model of this sync (declared: ${declared})`,
    );
  }
  return recordModelKey(model, scope.variant);
}

/** The run-scoped part of every records request to the orchestrator. */
function runScopeOf(scope: RunScope, model: string) {
  return {
    caller: scope.caller,
    providerConfigKey: scope.providerConfigKey,
    connectionId: scope.connectionId,
    // For a sync run the invocation id is the sync run's id, the same in every attempt: the generation.
    runId: scope.invocationId,
    // The orchestrator refuses writes of a run that is over, or of an attempt that was retried.
    attempt: scope.attempt,
    model,
  };
}

/**
 * Checks every record (a plain object with an `id`, JSON data, under the size cap) and groups them so that
 * each group travels in one NATS message of at most `budget` bytes of records; a group is one store
 * transaction.
 */
export function groupsOf(
  call: string,
  model: string,
  records: unknown[],
  budget: number,
): Record<string, unknown>[][] {
  const groups: Record<string, unknown>[][] = [];
  let group: Record<string, unknown>[] = [];
  let bytes = 0;
  records.forEach((record, index) => {
    const id = (record as { id?: unknown } | null)?.id;
    if (
      record === null ||
      typeof record !== 'object' ||
      Array.isArray(record) ||
      !((typeof id === 'string' && id !== '') || (typeof id === 'number' && Number.isFinite(id)))
    ) {
      throw new HostCallError(
        'invalid_arguments',
        `nango.${call}: record ${index} of model "${model}" has no id; every record needs an "id" (a non-empty string or a number)`,
      );
    }
    // Only a batch sent as data can fail here (a tampered sandbox's bigint, say): JSON text parsed is JSON.
    let json: string;
    try {
      json = JSON.stringify(record);
    } catch {
      throw new HostCallError(
        'invalid_arguments',
        `nango.${call}: record ${index} of model "${model}" is not JSON data`,
      );
    }
    const size = Buffer.byteLength(json);
    if (size > MAX_RECORD_BYTES) {
      throw new HostCallError(
        'invalid_arguments',
        `nango.${call}: record ${index} of model "${model}" is ${size} bytes, over the limit of ${MAX_RECORD_BYTES}`,
      );
    }
    if (group.length > 0 && bytes + size > budget) {
      groups.push(group);
      group = [];
      bytes = 0;
    }
    group.push(record as Record<string, unknown>);
    bytes += size;
  });
  if (group.length > 0) groups.push(group);
  return groups;
}

/**
 * Sends the groups in order, each dropped from the list as its request is made: the request holds only
 * its encoded bytes, so no record of the batch stays reachable while the orchestrator writes it.
 */
async function sendGroups(
  nats: NatsRequester,
  s: RunScope,
  model: string,
  op: RecordWriteOp,
  groups: Record<string, unknown>[][],
): Promise<boolean> {
  while (groups.length > 0) {
    const merging = s.merging.get(model);
    const reply = await nats.call(RECORDS_REQUESTS.write, {
      ...runScopeOf(s, model),
      op,
      records: groups.shift() ?? [],
      ...(merging ? { merging } : {}),
    });
    // Under ignore_if_modified_after the cursor follows the run's own writes.
    if (merging?.strategy === 'ignore_if_modified_after') {
      s.merging.set(model, { strategy: merging.strategy, cursor: reply.mergingCursor ?? null });
    }
  }
  return true;
}

/** batchSave, batchUpdate, batchDelete. */
function writeCall(nats: NatsRequester, call: string, op: RecordWriteOp) {
  return entry({
    types: SYNC,
    args: batchArgs,
    takesData: true,
    // Not async: the arguments (a batch of up to 1000 records) are checked and grouped here, and only the
    // groups are handed on (see `sendGroups`).
    run: (s, args) => {
      const model = modelOf(s, call, args.model);
      // The budget follows the server's max_payload (8 MB on the generated configuration: a batch of
      // 1000 records of 1 KB is one message and one store transaction, not two).
      const budget = recordsMessageBytes(nats.maxPayload);
      return sendGroups(nats, s, model, op, groupsOf(call, args.model, args.records, budget));
    },
  });
}

/** Deletes the model's records the run (or its deletion window) did not save. */
function deleteUnseenCall(nats: NatsRequester, call: string, window: boolean) {
  return entry({
    types: SYNC,
    args: modelArgs,
    run: async (s, args) => {
      const model = modelOf(s, call, args.model);
      return nats.call(
        RECORDS_REQUESTS.deleteUnseen,
        { ...runScopeOf(s, model), ...(window ? { window } : {}) },
        // Marking a large model's unseen records can take a while.
        { timeoutMs: 120_000 },
      );
    },
  });
}

/**
 * The sync API of a running script (`types: ['sync']`): batchSave/batchUpdate/batchDelete,
 * getRecordsByIds, trackDeletesStart/End, deleteRecordsFromPreviousExecutions, setMergingStrategy. The
 * orchestrator owns the records; these calls only scope, check and forward.
 */
export function recordsHostCalls(nats: NatsRequester): Record<string, HostCall<z.ZodType>> {
  return {
    batchSave: writeCall(nats, 'batchSave', 'save'),
    batchUpdate: writeCall(nats, 'batchUpdate', 'update'),
    batchDelete: writeCall(nats, 'batchDelete', 'delete'),
    getRecordsByIds: entry({
      types: SYNC,
      args: z.object({ model: modelArg, ids: z.array(z.string().max(256)).max(IDS_PER_CALL) }),
      run: async (s, args) => {
        const model = modelOf(s, 'getRecordsByIds', args.model);
        const records: ListRecordsResponse['records'] = [];
        if (args.ids.length === 0) return records;
        let cursor: string | undefined;
        // A page is cut short when it would not fit one message; the rest comes from its cursor.
        do {
          const page = await nats.call(RECORDS_REQUESTS.getByIds, {
            ...runScopeOf(s, model),
            ids: args.ids,
            ...(cursor ? { cursor } : {}),
          });
          records.push(...page.records);
          cursor = page.next_cursor ?? undefined;
        } while (cursor);
        return records;
      },
    }),
    // One page of the sync's own records of a model (its connection and variant), oldest change first.
    listRecords: entry({
      types: SYNC,
      args: z.object({
        model: modelArg,
        cursor: z.string().max(1000).nullish(),
        limit: z.number().int().min(1).max(RECORDS_BATCH_SIZE).default(100),
      }),
      run: async (s, args) => {
        const model = modelOf(s, 'listRecords', args.model);
        const page = await nats.call(RECORDS_REQUESTS.listForRun, {
          ...runScopeOf(s, model),
          limit: args.limit,
          ...(args.cursor ? { cursor: args.cursor } : {}),
        });
        return { records: page.records, next_cursor: page.next_cursor ?? null };
      },
    }),
    // Opens the model's deletion window (or joins the one an earlier run of a checkpointed full refresh
    // left open): what every run of the window saves counts as seen when trackDeletesEnd closes it.
    trackDeletesStart: entry({
      types: SYNC,
      args: modelArgs,
      run: async (s, args) => {
        const model = modelOf(s, 'trackDeletesStart', args.model);
        await nats.call(RECORDS_REQUESTS.trackDeletesStart, runScopeOf(s, model));
        return null;
      },
    }),
    trackDeletesEnd: deleteUnseenCall(nats, 'trackDeletesEnd', true),
    // Nango's older call: what this run did not save, whatever earlier runs saved.
    deleteRecordsFromPreviousExecutions: deleteUnseenCall(nats, 'deleteRecordsFromPreviousExecutions', false),
    setMergingStrategy: entry({
      types: SYNC,
      args: z.object({ model: modelArg, strategy: z.enum(['override', 'ignore_if_modified_after']) }),
      run: async (s, args) => {
        const model = modelOf(s, 'setMergingStrategy', args.model);
        if (args.strategy === 'override') {
          s.merging.set(model, { strategy: 'override' });
          return null;
        }
        // Records modified after this point (by a webhook run, say) are left alone by this run's writes.
        const { cursor } = await nats.call(RECORDS_REQUESTS.lastCursor, runScopeOf(s, model));
        s.merging.set(model, { strategy: 'ignore_if_modified_after', cursor });
        return null;
      },
    }),
  };
}
