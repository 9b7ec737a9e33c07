import { createHash } from 'node:crypto';
import type ivm from 'isolated-vm';
import { LRUCache } from 'lru-cache';

/** A source's key in the caches: its sha256. */
export function sourceKey(source: string): string {
  return createHash('sha256').update(source).digest('hex');
}

/**
 * V8's code cache for the prelude and for recently run bundles (by content): a new isolate then
 * compiles them without parsing. Cached data is bytecode of code the runtime was handed anyway; V8
 * checks it against the source and ignores it when it does not match.
 */
export class CodeCache {
  private readonly entries = new LRUCache<string, { data: ivm.ExternalCopy<ArrayBuffer>; bytes: number }>({
    max: 500,
    // Bytecode is of the order of its source's size; the source length bounds the cache well enough.
    maxSize: 64 * 1024 * 1024,
    sizeCalculation: (entry) => Math.max(1, entry.bytes),
  });

  async compile(
    isolate: ivm.Isolate,
    source: string,
    filename: string,
    key = sourceKey(source),
  ): Promise<ivm.Script> {
    const cached = this.entries.get(key);
    if (cached) return isolate.compileScript(source, { filename, cachedData: cached.data });
    const script = await isolate.compileScript(source, { filename, produceCachedData: true });
    const produced = (script as ivm.Script & ivm.CachedDataResult).cachedData;
    if (produced) this.entries.set(key, { data: produced, bytes: source.length });
    return script;
  }

  /** Drops every entry (the garbage collector frees their bytecode). */
  dispose(): void {
    this.entries.clear();
  }
}
