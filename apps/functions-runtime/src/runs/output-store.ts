import { Inject, Injectable } from '@nestjs/common';
import { FUNCTION_OUTPUT_BUCKET } from '@switchboard/contracts';
import { NATS_CONNECTION } from '@switchboard/messaging';
import { nanos, type NatsConnection, type ObjectStore } from 'nats';

/** Unread outputs (a reader that died before deleting) are dropped by JetStream after a day. */
const OUTPUT_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * Outputs too large for one NATS reply: put in the JetStream object store bucket of the contract under
 * the invocation id. The reader (the orchestrator) deletes the object once it stored the output.
 */
@Injectable()
export class OutputStore {
  private bucket?: Promise<ObjectStore>;

  constructor(@Inject(NATS_CONNECTION) private readonly nc: NatsConnection) {}

  async put(
    invocationId: string,
    json: Buffer,
  ): Promise<{ bucket: typeof FUNCTION_OUTPUT_BUCKET; name: string; bytes: number }> {
    this.bucket ??= this.nc
      .jetstream()
      .views.os(FUNCTION_OUTPUT_BUCKET, { ttl: nanos(OUTPUT_TTL_MS) })
      .catch((error: unknown) => {
        this.bucket = undefined;
        throw error;
      });
    const store = await this.bucket;
    await store.putBlob({ name: invocationId }, json);
    return { bucket: FUNCTION_OUTPUT_BUCKET, name: invocationId, bytes: json.length };
  }
}
