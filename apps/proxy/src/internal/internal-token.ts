import { createHash, timingSafeEqual, type KeyObject } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import {
  PROXY_SIGNATURE_MAX_AGE_MS,
  PROXY_SIGNED_BODY_MAX_BYTES,
  PROXY_UNSIGNED_PAYLOAD,
  type ProxyCaller,
} from '@switchboard/contracts';
import { verifyProxyCall } from '@switchboard/crypto';
import type Redis from 'ioredis';
import { LRUCache } from 'lru-cache';

/** A gateway-signed request: who is calling, and the body digest the proxy must still check. */
export interface SignedCall {
  caller: ProxyCaller;
  /** base64url SHA-256 of the body, or PROXY_UNSIGNED_PAYLOAD for a large streamed one. */
  bodyDigest: string;
}

/** Where spent nonces are remembered: `claim` is true the first time a nonce is seen, false after. */
export interface NonceStore {
  claim(nonce: string, ttlMs: number): Promise<boolean>;
}

/** This process's memory alone: a replay to another replica of the proxy is not caught. */
export class MemoryNonces implements NonceStore {
  private readonly seen = new LRUCache<string, true>({ max: 1_000_000, ttlAutopurge: false });

  async claim(nonce: string, ttlMs: number): Promise<boolean> {
    if (this.seen.has(nonce)) return false;
    this.seen.set(nonce, true, { ttl: ttlMs });
    return true;
  }
}

/**
 * Nonces shared by every replica of the proxy through Redis (`SET NX PX`: the first replica to claim a
 * nonce wins, atomically). This process's memory is asked first, and alone while Redis is unreachable
 * (a replay to this replica is still refused; one to another replica is not, until Redis is back).
 */
export class RedisNonces implements NonceStore {
  private readonly local = new MemoryNonces();

  constructor(
    private readonly redis: Redis,
    private readonly onUnavailable: (error: Error) => void = () => undefined,
  ) {}

  async claim(nonce: string, ttlMs: number): Promise<boolean> {
    if (!(await this.local.claim(nonce, ttlMs))) return false;
    try {
      const set = await this.redis.set(`switchboard:proxy:nonce:${nonce}`, '1', 'PX', ttlMs, 'NX');
      return set === 'OK';
    } catch (error) {
      this.onUnavailable(error as Error);
      return true;
    }
  }
}

/**
 * Checks the gateway's signature (`verifyProxyCall`) and takes the nonce: the same signed request is
 * accepted once. Nonces are remembered (in the store, shared by the replicas when it is Redis) for twice
 * the signature's lifetime, so a replay is refused until the signature is stale anyway.
 */
export class GatewaySignatures {
  constructor(
    private readonly key: KeyObject,
    private readonly nonces: NonceStore = new MemoryNonces(),
  ) {}

  async verify(
    method: string,
    url: string,
    headers: IncomingHttpHeaders,
    now = Date.now(),
  ): Promise<SignedCall | undefined> {
    const call = verifyProxyCall(this.key, method, url, headers, now);
    // Only a valid signature spends its nonce (a forger cannot burn the gateway's nonces).
    if (!call || !(await this.nonces.claim(call.nonce, 2 * PROXY_SIGNATURE_MAX_AGE_MS))) return undefined;
    return { caller: call.caller, bodyDigest: call.bodyDigest };
  }
}

/**
 * The body of a signed call, checked against its digest before anything is sent on: the bytes (or
 * undefined when there are none) when they match, `mismatch` otherwise. A body signed as unsigned must
 * be one the gateway could not have held (chunked, or declared larger than it hashes).
 */
export async function checkedBody(
  req: IncomingMessage,
  bodyDigest: string,
): Promise<Buffer | undefined | 'stream' | 'mismatch'> {
  const declared = req.headers['content-length'];
  if (bodyDigest === PROXY_UNSIGNED_PAYLOAD)
    return declared === undefined || Number(declared) > PROXY_SIGNED_BODY_MAX_BYTES ? 'stream' : 'mismatch';
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > PROXY_SIGNED_BODY_MAX_BYTES) return 'mismatch';
    chunks.push(chunk);
  }
  const body = Buffer.concat(chunks, size);
  const digest = createHash('sha256').update(body).digest();
  const given = Buffer.from(bodyDigest, 'base64url');
  if (given.length !== digest.length || !timingSafeEqual(given, digest)) return 'mismatch';
  return size === 0 ? undefined : body;
}
