/** What uncontrolledFetch answers: a fetch Response's reading surface, built from the host's copy. */

/** Headers by lower-case name; a repeated header's values joined by ", ", as fetch's Headers does. */
export class FetchHeaders {
  private readonly map = new Map<string, string>();
  constructor(entries: Iterable<readonly [unknown, unknown]>) {
    for (const [k, v] of entries) {
      const key = String(k).toLowerCase();
      const had = this.map.get(key);
      this.map.set(key, had !== undefined ? had + ', ' + String(v) : String(v));
    }
  }
  get(name: string): string | null {
    const v = this.map.get(String(name).toLowerCase());
    return v === undefined ? null : v;
  }
  has(name: string): boolean {
    return this.map.has(String(name).toLowerCase());
  }
  forEach(fn: (value: string, key: string, headers: FetchHeaders) => void): void {
    for (const [k, v] of this.map) fn(v, k, this);
  }
  entries(): IterableIterator<[string, string]> {
    return this.map.entries();
  }
  keys(): IterableIterator<string> {
    return this.map.keys();
  }
  values(): IterableIterator<string> {
    return this.map.values();
  }
  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.map.entries();
  }
}

/** The host's answer to an uncontrolledFetch call. */
export interface FetchReply {
  url: string;
  status: number;
  statusText: string;
  headers: [string, string][];
  bodyBase64: string;
}

/** Bytes with a toString(encoding), as Buffer gives them. */
export interface TextBytes extends Uint8Array {
  toString(encoding?: string): string;
}

export interface FetchResponse {
  url: string;
  status: number;
  statusText: string;
  ok: boolean;
  redirected: boolean;
  headers: FetchHeaders;
  readonly bodyUsed: boolean;
  text(): Promise<string>;
  json(): Promise<unknown>;
  arrayBuffer(): Promise<ArrayBuffer>;
}

/** A Response over the reply; its body is read once, as fetch's is. */
export function responseOf(reply: FetchReply, fromBase64: (base64: string) => TextBytes): FetchResponse {
  let used = false;
  const bytes = (): Promise<TextBytes> => {
    if (used) return Promise.reject(new TypeError('Body is unusable: Body has already been read'));
    used = true;
    return Promise.resolve(fromBase64(reply.bodyBase64));
  };
  return {
    url: reply.url,
    status: reply.status,
    statusText: reply.statusText,
    ok: reply.status >= 200 && reply.status < 300,
    redirected: false,
    headers: new FetchHeaders(reply.headers),
    get bodyUsed() {
      return used;
    },
    text: () => bytes().then((b) => b.toString('utf8')),
    json: () => bytes().then((b) => JSON.parse(b.toString('utf8')) as unknown),
    arrayBuffer: () =>
      bytes().then((b) => b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer),
  };
}
