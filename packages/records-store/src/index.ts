export { RecordsStore } from './records.store';
export { RecordsStoreError } from './records-store.errors';
export { recordJson } from './record-json';
export { rewrapAllRecords, type RewrapReport } from './rewrap-records';
export {
  Cursor,
  RecordIds,
  dataHash,
  externalIdOf,
  modelKey,
  payloadAad,
  type DecodedCursor,
  type RecordScope,
} from './record-keys';
export type {
  LastAction,
  ListJsonResult,
  ListQuery,
  ListResult,
  MergingStrategy,
  ModelCounts,
  NangoRecordMetadata,
  StoredRecord,
  WriteFence,
  WriteOp,
  WriteResult,
} from './records.types';
