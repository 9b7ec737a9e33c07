import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { FUNCTION_BUNDLE_REQUESTS, SwitchboardError, type FunctionRunRequest } from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import { LRUCache } from 'lru-cache';

/** Bundle text kept in all (by length): a few hundred typical bundles, a hundred of the largest. */
const MAX_CACHED_CHARS = 96 * 1024 * 1024;

const sha256 = (code: string) => createHash('sha256').update(code).digest('hex');

/**
 * Function bundles by content hash. A run request names its bundle by sha256; the bundle is asked of the
 * orchestrator once and kept here (least recently used go first), so a bundle does not travel with every
 * run and an action's input does not share a message with it. A hash names one content: a redeploy with
 * changed code has a new hash, so nothing kept here is ever stale. What comes back is checked against
 * the hash it was asked by.
 */
@Injectable()
export class BundleCache {
  private readonly bundles = new LRUCache<string, string>({
    maxSize: MAX_CACHED_CHARS,
    sizeCalculation: (code) => Math.max(1, code.length),
  });
  /** Bundles being fetched: runs of one new version at once ask once. */
  private readonly fetching = new Map<string, Promise<string>>();

  constructor(private readonly nats: NatsRequester) {}

  async codeOf(req: FunctionRunRequest): Promise<string> {
    const { codeSha256 } = req.function;
    if (req.function.code !== undefined) return req.function.code;
    const known = this.bundles.get(codeSha256);
    if (known !== undefined) return known;
    let pending = this.fetching.get(codeSha256);
    if (!pending) {
      pending = this.fetch(req).finally(() => this.fetching.delete(codeSha256));
      this.fetching.set(codeSha256, pending);
    }
    return pending;
  }

  /** Bundles kept right now (tests). */
  get size(): number {
    return this.bundles.size;
  }

  private async fetch(req: FunctionRunRequest): Promise<string> {
    const { code } = await this.nats.call(FUNCTION_BUNDLE_REQUESTS.get, {
      caller: req.caller,
      functionId: req.function.id,
      codeSha256: req.function.codeSha256,
    });
    if (sha256(code) !== req.function.codeSha256) {
      throw new SwitchboardError('server_error', 'The bundle fetched does not match its hash');
    }
    this.bundles.set(req.function.codeSha256, code);
    return code;
  }
}
