import { SwitchboardError } from '@switchboard/contracts';

/**
 * Coded errors of the records store (a record without an id, a cursor it never gave out). They travel
 * over NATS as any coded error does: the code and message, mapped to a status by the gateway's table.
 */
export class RecordsStoreError extends SwitchboardError {}
