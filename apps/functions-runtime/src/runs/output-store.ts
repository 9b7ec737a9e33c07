import { Inject, Injectable } from '@nestjs/common';
import { FUNCTION_OUTPUT_BUCKET } from '@switchboard/contracts';
import { NATS_CONNECTION, PayloadStore } from '@switchboard/messaging';
import type { NatsConnection } from 'nats';

/** Unread outputs (a reader that died before deleting) are dropped by JetStream after a day. */
const OUTPUT_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * Outputs too large for one NATS reply: put in the JetStream object store bucket of the contract under
 * the invocation id. The reader (the orchestrator) deletes the object once it stored the output.
 */
@Injectable()
export class OutputStore {
  private readonly store: PayloadStore;

  constructor(@Inject(NATS_CONNECTION) nc: NatsConnection) {
    this.store = new PayloadStore(nc, FUNCTION_OUTPUT_BUCKET, { ttlMs: OUTPUT_TTL_MS });
  }

  async put(
    invocationId: string,
    json: Buffer,
  ): Promise<{ bucket: typeof FUNCTION_OUTPUT_BUCKET; name: string; bytes: number }> {
    const { name } = await this.store.put(json, { name: invocationId });
    return { bucket: FUNCTION_OUTPUT_BUCKET, name, bytes: json.length };
  }
}
