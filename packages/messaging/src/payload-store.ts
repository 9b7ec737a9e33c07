import { randomUUID } from 'node:crypto';
import { nanos, StorageType, type NatsConnection, type ObjectStore } from 'nats';

/**
 * Payloads too large for one NATS message (1 MiB by default), carried through a JetStream object store
 * bucket instead: the writer puts the bytes under a name and sends the name; the reader takes them (reads,
 * then deletes). The bucket's TTL is the backstop for a reader that never came.
 */
export interface PayloadStoreOptions {
  /** How long an object not taken is kept; only applied when this side creates the bucket. */
  ttlMs?: number;
  /** File (the default) or memory storage; only applied when this side creates the bucket. */
  storage?: 'file' | 'memory';
}

export class PayloadStore {
  private bucket?: Promise<ObjectStore>;

  constructor(
    private readonly nc: NatsConnection,
    readonly bucketName: string,
    private readonly options: PayloadStoreOptions = {},
  ) {}

  /** Stores the bytes (or a stream of chunks, never held whole) under `name`, a fresh UUID by default. */
  async put(
    payload: Uint8Array | ReadableStream<Uint8Array>,
    options: { name?: string; timeoutMs?: number } = {},
  ): Promise<{ name: string; bytes: number }> {
    const store = await this.open();
    const name = options.name ?? randomUUID();
    const stream = payload instanceof Uint8Array ? ReadableStream.from([payload]) : payload;
    const info = await store.put(
      { name },
      stream,
      options.timeoutMs === undefined ? undefined : { timeout: options.timeoutMs },
    );
    return { name, bytes: info.size };
  }

  /** The bytes stored under `name`, or undefined when they are gone (taken, expired, never put). */
  async get(name: string): Promise<Uint8Array | undefined> {
    const store = await this.open();
    return (await store.getBlob(name)) ?? undefined;
  }

  /** Deletes the object; one already gone is not an error (the TTL may have been first). */
  async delete(name: string): Promise<void> {
    const store = await this.open();
    await store.delete(name).catch(() => undefined);
  }

  /** Reads then deletes: for payloads read once. */
  async take(name: string): Promise<Uint8Array | undefined> {
    const bytes = await this.get(name);
    await this.delete(name);
    return bytes;
  }

  /** Opened once; a failed open is tried again on the next call. */
  private open(): Promise<ObjectStore> {
    const { ttlMs, storage } = this.options;
    this.bucket ??= this.nc
      .jetstream()
      .views.os(this.bucketName, {
        ...(ttlMs === undefined ? {} : { ttl: nanos(ttlMs) }),
        ...(storage === undefined
          ? {}
          : { storage: storage === 'memory' ? StorageType.Memory : StorageType.File }),
      })
      .catch((error: unknown) => {
        this.bucket = undefined;
        throw error;
      });
    return this.bucket;
  }
}

/** Whether a JSON text fits inline under `inlineBytes`; else it goes through a PayloadStore. */
export function fitsInline(json: string, inlineBytes: number): boolean {
  return json.length <= inlineBytes && Buffer.byteLength(json) <= inlineBytes;
}

/** A stored JSON payload, parsed from a view of its bytes (never a copy: stored payloads are large). */
export function parseStoredJson(bytes: Uint8Array): unknown {
  return JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'));
}
