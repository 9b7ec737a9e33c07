/**
 * The JavaScript evaluated in every run's fresh context before the function bundle. It runs inside the
 * isolate (plain V8: no Node, no I/O), so it is kept as source text here rather than compiled with the
 * host. It takes the library off the global object, shuts string code generation off, installs the
 * globals Nango's runner gives scripts, and completes with one function, `control(op, ...args)`, that the
 * host holds a reference to (no global names it, so the bundle cannot reach or replace it):
 *
 * - `bind(hostCall, hostLog, hostSleep, metaJson)`: the run's three host References and its metadata,
 *   once; builds the `nango` object. Answers `'ok'`, or `'early'` when code used a run capability (log,
 *   timer, host call) before it, which a context made ahead of its run must not have done.
 * - `load()`: evaluates the bundle's module top level (`globalThis.__factory`); `'ok'`, `'early'` or `'threw'`.
 * - `start(inputJson)`: loads the bundle if not yet loaded, runs the handler, answers one JSON string.
 * - `run(hostCall, hostLog, hostSleep, metaJson, inputJson)`: `bind` then `start` in one call (one
 *   crossing into the isolate instead of two); when bind does not answer `'ok'`, its answer after a NUL.
 * - `abort(message)`: fires the script's abortSignal.
 * - `warm(parts)` / `used()`: evaluate library parts (comma-separated) / which ones this context used.
 *
 * Nothing run-specific is in the context before `bind` (sandbox.ts, "ready contexts").
 *
 * Everything crossing the boundary is copied, never a host object: a script can only ever touch objects of
 * its own heap. What comes in is JSON text; host calls send JSON text too, except the records writes,
 * which send a batch of plain data as a structured copy (`plainData`, below).
 */
export const PRELUDE_SOURCE = String.raw`
(function () {
  'use strict';
  const g = globalThis;
  const lib = g.__sandboxLib;
  delete g.__sandboxLib;
  // Node's crypto, synchronously (host-crypto.ts): bytes in, bytes out, copied both ways.
  const hostCrypto = g.__hostCrypto;
  delete g.__hostCrypto;
  // The run's own bindings: none until the host binds the one run this context serves.
  let hostCall;
  let hostLog;
  let hostSleep;
  let meta;
  let bound = false;
  // A run capability was used before bind (a module top level evaluated ahead of its run): the host then
  // drops this context and starts the run on a new one, where the top level runs after bind as before.
  let early = false;
  const needsRun = (what) => {
    early = true;
    throw new Error(what + ' is not available before the run starts');
  };

  // ---- no code generation from strings, no WebAssembly ------------------------------------------
  // isolated-vm has no switch for V8's AllowCodeGenerationFromStrings, so every way to reach the
  // Function constructors is replaced. This is defence in depth: code made this way would still be
  // inside the isolate. zod notices (its eval probe throws) and stays in its interpreted mode.
  const refuse = function () {
    throw new EvalError('Code generation from strings is disabled in functions');
  };
  const ctors = [
    Function,
    Object.getPrototypeOf(async function () {}).constructor,
    Object.getPrototypeOf(function* () {}).constructor,
    Object.getPrototypeOf(async function* () {}).constructor,
  ];
  for (const C of ctors) {
    Object.defineProperty(C.prototype, 'constructor', { value: refuse, writable: false, configurable: false });
  }
  refuse.prototype = Function.prototype;
  Object.defineProperty(g, 'Function', { value: refuse, writable: false, configurable: false });
  Object.defineProperty(g, 'eval', { value: refuse, writable: false, configurable: false });
  delete g.WebAssembly;
  // The library's parts are evaluated on first use (sandbox-lib/entry.js): a run pays only for what it touches.
  // Which parts the script reached for (its module top level included): the host reads them after the
  // run (used, below), and has them evaluated ahead in the next context of the same function version.
  const touched = { zod: false, URL: false, URLSearchParams: false, Buffer: false, fflate: false, soap: false };
  const part = (name) => {
    touched[name] = true;
    return lib[name]();
  };
  let zodConfigured = false;
  const configureZod = () => {
    const z = lib.zod();
    if (!zodConfigured) {
      z.config({ jitless: true });
      zodConfigured = true;
    }
    return z;
  };
  const zod = () => {
    touched.zod = true;
    return configureZod();
  };

  // ---- logging ----------------------------------------------------------------------------------
  const format = (args) =>
    args
      .map((a) => {
        if (typeof a === 'string') return a;
        if (a instanceof Error) return a.stack || String(a);
        try {
          const s = JSON.stringify(a);
          return s === undefined ? String(a) : s;
        } catch (e) {
          return String(a);
        }
      })
      .join(' ');
  // nango.setLogger({ level }): lines under the level (or all, 'off') are not kept.
  const LEVELS = { debug: 0, info: 1, warn: 2, error: 3, off: 4 };
  let minLevel = 0;
  const log = (level, args) => {
    if (!bound) needsRun('logging');
    if ((LEVELS[level] === undefined ? 1 : LEVELS[level]) < minLevel) return;
    let message = format(args);
    if (message.length > meta.logLineChars) message = message.slice(0, meta.logLineChars) + '…';
    hostLog.applySync(undefined, [level, message]);
  };
  const consoleObject = {
    log: (...a) => log('info', a),
    info: (...a) => log('info', a),
    debug: (...a) => log('debug', a),
    warn: (...a) => log('warn', a),
    error: (...a) => log('error', a),
  };

  // ---- timers (bounded by the run's wall clock: the isolate is gone when it ends) ---------------
  // Each pending timer holds a host timer: capped, so a script cannot pile them up in the host's heap.
  const MAX_TIMERS = 1000;
  const timers = new Map();
  let nextTimer = 1;
  const setTimeout = (fn, ms, ...args) => {
    if (!bound) needsRun('setTimeout');
    if (typeof fn !== 'function') throw new TypeError('setTimeout needs a function');
    if (timers.size >= MAX_TIMERS) throw new RangeError('too many pending timers (' + MAX_TIMERS + ')');
    const id = nextTimer++;
    timers.set(id, true);
    hostSleep.apply(undefined, [Math.max(0, Number(ms) || 0)], { result: { promise: true } }).then(() => {
      if (timers.delete(id)) fn(...args);
    });
    return id;
  };
  const clearTimeout = (id) => {
    timers.delete(id);
  };

  // ---- text and bytes -----------------------------------------------------------------------------
  const Buffer = () => part('Buffer');
  class TextEncoder {
    get encoding() {
      return 'utf-8';
    }
    encode(s = '') {
      const b = Buffer().from(String(s), 'utf8');
      return new Uint8Array(b.buffer, b.byteOffset, b.length);
    }
  }
  class TextDecoder {
    constructor(label = 'utf-8') {
      if (!/^utf-?8$/i.test(String(label))) throw new RangeError('only utf-8 is supported');
    }
    get encoding() {
      return 'utf-8';
    }
    decode(bytes) {
      if (bytes === undefined) return '';
      const view = ArrayBuffer.isView(bytes)
        ? new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)
        : new Uint8Array(bytes);
      return Buffer().from(view).toString('utf8');
    }
  }

  // ---- abort signal (the run's wall clock is up, or it was stopped from outside) --------------------------------------
  const abortListeners = new Set();
  const abortSignal = {
    aborted: false,
    reason: undefined,
    onabort: null,
    addEventListener(type, fn) {
      if (type === 'abort' && typeof fn === 'function') abortListeners.add(fn);
    },
    removeEventListener(type, fn) {
      abortListeners.delete(fn);
    },
    throwIfAborted() {
      if (this.aborted) throw this.reason;
    },
  };
  const abort = (message) => {
    if (abortSignal.aborted) return;
    abortSignal.aborted = true;
    abortSignal.reason = new Error(message);
    const event = { type: 'abort', target: abortSignal };
    for (const fn of [abortSignal.onabort, ...abortListeners]) {
      try {
        if (typeof fn === 'function') fn(event);
      } catch (e) {
        // a listener's failure must not stop the others
      }
    }
  };

  // ---- crypto (Node's, computed by the host: results equal Node's byte for byte) --------------------
  const cryptoCall = (op, a, b, c) =>
    hostCrypto.applySync(undefined, [op, a, b, c], { arguments: { copy: true }, result: { copy: true } });
  const bytesOf = (data, encoding, what) => {
    if (typeof data === 'string') return Buffer().from(data, encoding || 'utf8');
    if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    if (data instanceof ArrayBuffer) return new Uint8Array(data);
    throw new TypeError('The "' + what + '" argument must be of type string or an instance of Buffer, TypedArray, or DataView');
  };
  // Each update keeps a copy of its bytes (a script may reuse its buffer); digest sends them all at once.
  const copyOf = (view) => new Uint8Array(view);
  const output = (bytes, encoding) => {
    const buf = Buffer().from(bytes);
    return encoding === undefined || encoding === 'buffer' ? buf : buf.toString(encoding);
  };
  class Hash {
    constructor(algorithm, op, key) {
      this._algorithm = String(algorithm);
      this._op = op;
      this._key = key;
      this._chunks = [];
      this._done = false;
      // Unknown algorithms fail here, as in Node.
      if (op !== 'sign') cryptoCall(op, this._algorithm, op === 'hmac' ? key : [], op === 'hmac' ? [] : undefined);
    }
    update(data, encoding) {
      if (this._done) throw new Error('Digest already called');
      this._chunks.push(copyOf(bytesOf(data, encoding, 'data')));
      return this;
    }
    digest(encoding) {
      if (this._done) throw new Error('Digest already called');
      this._done = true;
      const chunks = this._chunks;
      this._chunks = [];
      const out = this._op === 'hmac' ? cryptoCall('hmac', this._algorithm, this._key, chunks) : cryptoCall('hash', this._algorithm, chunks);
      return output(out, encoding);
    }
    copy() {
      if (this._done) throw new Error('Digest already called');
      const twin = Object.create(Hash.prototype);
      Object.assign(twin, this, { _chunks: this._chunks.slice() });
      return twin;
    }
  }
  class Sign {
    constructor(algorithm) {
      this._algorithm = String(algorithm);
      this._chunks = [];
    }
    update(data, encoding) {
      this._chunks.push(copyOf(bytesOf(data, encoding, 'data')));
      return this;
    }
    sign(key, encoding) {
      const pem = typeof key === 'string' ? key : key && typeof key.key === 'string' ? key.key : ArrayBuffer.isView(key) ? Buffer().from(key.buffer, key.byteOffset, key.byteLength).toString('utf8') : undefined;
      if (pem === undefined) throw new TypeError('sign needs the private key as PEM text');
      return output(cryptoCall('sign', this._algorithm, pem, this._chunks), encoding);
    }
  }
  const randomFill = (view) => {
    const bytes = cryptoCall('random', view.byteLength);
    new Uint8Array(view.buffer, view.byteOffset, view.byteLength).set(bytes);
    return view;
  };
  const getRandomValues = (view) => {
    if (!ArrayBuffer.isView(view) || view instanceof Float32Array || view instanceof Float64Array || view instanceof DataView) {
      throw new TypeError('getRandomValues needs an integer typed array');
    }
    if (view.byteLength > 65536) throw new RangeError('getRandomValues: more than 65536 bytes requested');
    return randomFill(view);
  };
  const randomUUID = () => cryptoCall('uuid');
  let cryptoModule;
  const crypto = () => {
    if (cryptoModule) return cryptoModule;
    cryptoModule = {
      createHash: (algorithm) => new Hash(algorithm, 'hash'),
      createHmac: (algorithm, key) => new Hash(algorithm, 'hmac', copyOf(bytesOf(key, 'utf8', 'key'))),
      createSign: (algorithm) => new Sign(algorithm),
      randomBytes: (size, callback) => {
        const bytes = Buffer().from(cryptoCall('random', Number(size)));
        if (typeof callback === 'function') {
          Promise.resolve().then(() => callback(null, bytes));
          return undefined;
        }
        return bytes;
      },
      randomUUID,
      randomInt: (min, max) => {
        if (max === undefined) {
          max = min;
          min = 0;
        }
        const range = max - min;
        if (!Number.isSafeInteger(min) || !Number.isSafeInteger(max) || range <= 0 || range > 2 ** 48) {
          throw new RangeError('randomInt needs safe integers with 0 < max - min <= 2^48');
        }
        // Rejection sampling over 48 random bits: no modulo bias.
        const limit = 2 ** 48 - (2 ** 48 % range);
        for (;;) {
          const b = cryptoCall('random', 6);
          const n = ((b[0] * 256 + b[1]) * 256 + b[2]) * 16777216 + ((b[3] * 256 + b[4]) * 256 + b[5]);
          if (n < limit) return min + (n % range);
        }
      },
      timingSafeEqual: (a, b) => {
        const x = bytesOf(a, undefined, 'buf1');
        const y = bytesOf(b, undefined, 'buf2');
        if (x.byteLength !== y.byteLength) throw new RangeError('Input buffers must have the same byte length');
        let diff = 0;
        for (let i = 0; i < x.byteLength; i++) diff |= x[i] ^ y[i];
        return diff === 0;
      },
      getRandomValues,
      webcrypto: { getRandomValues, randomUUID },
    };
    return cryptoModule;
  };

  // ---- unzipper (what scripts use of it: Open.buffer, then each entry's buffer()) --------------------
  let unzipperModule;
  const unzipper = () => {
    if (unzipperModule) return unzipperModule;
    const fflate = () => part('fflate');
    const open = async (data) => {
      const zip = bytesOf(data, undefined, 'buffer');
      const files = [];
      // A first pass lists the entries without inflating any (the filter refuses each one).
      fflate().unzipSync(zip, {
        filter: (file) => {
          const isDir = file.name.endsWith('/');
          files.push({
            path: file.name,
            type: isDir ? 'Directory' : 'File',
            compressedSize: file.size,
            uncompressedSize: file.originalSize,
            buffer: async () => {
              const out = fflate().unzipSync(zip, { filter: (f) => f.name === file.name });
              const bytes = out[file.name];
              return Buffer().from(bytes ? bytes : new Uint8Array(0));
            },
          });
          return false;
        },
      });
      return { files };
    };
    unzipperModule = { Open: { buffer: open } };
    return unzipperModule;
  };

  // ---- soap (sandbox-lib/soap.js): WSDL and calls through uncontrolledFetch, so the egress policy applies --
  let soapModule;
  const soap = () => {
    if (soapModule) return soapModule;
    soapModule = part('soap')({
      fetch: async (url, options) => responseOf(await call('uncontrolledFetch', { url, method: options.method, headers: options.headers, body: options.body })),
      base64: (text) => Buffer().from(String(text), 'utf8').toString('base64'),
      nonce: () => crypto().randomBytes(16).toString('base64'),
      passwordDigest: (nonce, created, password) =>
        crypto()
          .createHash('sha1')
          .update(Buffer().concat([Buffer().from(nonce, 'base64'), Buffer().from(created + password, 'utf8')]))
          .digest('base64'),
    });
    return soapModule;
  };

  // ---- botbuilder (sandbox-lib/botbuilder.js): message and card builders; one module object per run ------
  let botbuilderModule;
  const botbuilder = () => {
    if (!botbuilderModule) botbuilderModule = part('botbuilder')();
    return botbuilderModule;
  };

  const installGlobals = {
    console: consoleObject,
    setTimeout,
    clearTimeout,
    TextEncoder,
    TextDecoder,
    atob: (s) => Buffer().from(String(s), 'base64').toString('latin1'),
    btoa: (s) => Buffer().from(String(s), 'latin1').toString('base64'),
    // Web Crypto's two synchronous calls (no subtle).
    crypto: { randomUUID, getRandomValues },
  };
  const setGlobal = (name, value) =>
    Object.defineProperty(g, name, { value, writable: true, configurable: true, enumerable: false });
  for (const [name, value] of Object.entries(installGlobals)) setGlobal(name, value);
  // Loaded when a script first reads them; a script that assigns one first never loads it.
  for (const [name, load] of [
    ['URL', () => part('URL')],
    ['URLSearchParams', () => part('URLSearchParams')],
    ['Buffer', Buffer],
  ]) {
    Object.defineProperty(g, name, {
      configurable: true,
      enumerable: false,
      get() {
        const value = load();
        // Undefined while the part is loading (its own module looked for the global): the getter stays.
        if (value !== undefined) setGlobal(name, value);
        return value;
      },
      set(value) {
        setGlobal(name, value);
      },
    });
  }

  // ---- host calls -----------------------------------------------------------------------------------
  const hostErrors = new WeakSet();
  // At most this many host calls of a run are in flight; the others wait here, in the script's own heap
  // (a Promise.all over thousands of calls must not become thousands of host requests at once).
  const MAX_IN_FLIGHT = 16;
  let inFlight = 0;
  const queue = [];
  // asData: the arguments are plain JSON data (see plainData), and the host takes them as a structured copy
  // instead of JSON text. For a records batch: the host's JSON.parse would put every short string value
  // (ids, mostly) into V8's string table, which only a full collection empties (bench/README.md).
  const call = async (name, args, asData) => {
    if (!bound) needsRun('nango.' + name);
    // Arguments are taken as they are when the call is made: a copy is made at once (no await comes before
    // it) unless the call must wait for a slot, when its JSON text is made now instead, as for any call.
    const argsJson =
      asData && inFlight < MAX_IN_FLIGHT ? undefined : JSON.stringify(args === undefined ? null : args);
    if (inFlight >= MAX_IN_FLIGHT) await new Promise((resolve) => queue.push(resolve));
    else inFlight++;
    // The arguments go inside an array, copied: isolated-vm then serialises them and the host gets values
    // of its own heap, which its garbage collector sees. A string passed bare, over 1 KB, would arrive as
    // an external string whose bytes the host's V8 does not count (sandbox.ts, "host calls").
    const send = (sent) =>
      hostCall.apply(undefined, [name, [sent]], {
        arguments: { copy: true },
        result: { promise: true, copy: true },
      });
    let raw;
    try {
      if (argsJson !== undefined) {
        raw = await send(argsJson);
      } else {
        // The host's side never rejects: a rejection is the copy refused (a Proxy, which plainData cannot
        // see through), and the host has not run the call. JSON text then, as for any other call.
        raw = await send(args).catch(() => send(JSON.stringify(args)));
      }
    } finally {
      const next = queue.shift();
      if (next) next();
      else inFlight--;
    }
    const reply = JSON.parse(raw);
    if (reply.ok) return reply.value;
    const error = new Error(reply.error.message);
    error.name = 'SwitchboardError';
    error.code = reply.error.code;
    hostErrors.add(error);
    throw error;
  };

  // Whether a structured copy of a value gives the host exactly what JSON.stringify would give it: only
  // strings, numbers, booleans, null, undefined, arrays and objects of plain prototypes without a toJSON
  // (the host serialises what it gets as JSON; undefined and NaN come out as JSON.stringify puts them),
  // and Dates while Date.prototype.toJSON is the one it was (the host's own gives the same ISO text).
  // Anything else (class instances, Maps, functions, symbols, bigints, typed arrays, a cycle or anything
  // nested deeper than PLAIN_DEPTH) goes as JSON text, with JSON.stringify's own result or error.
  const PLAIN_DEPTH = 64;
  const objectProto = Object.prototype;
  const arrayProto = Array.prototype;
  const dateProto = Date.prototype;
  const dateToJson = Date.prototype.toJSON;
  const dateToIso = Date.prototype.toISOString;
  const hasOwn = Object.hasOwn;
  const protoOf = Object.getPrototypeOf;
  const keysOf = Object.keys;
  const isArray = Array.isArray;
  const isFiniteNumber = Number.isFinite;
  const plainData = (value, depth) => {
    switch (typeof value) {
      case 'string':
      case 'number':
      case 'boolean':
      case 'undefined':
        return true;
      case 'object':
        break;
      default:
        return false;
    }
    if (value === null) return true;
    if (depth >= PLAIN_DEPTH) return false;
    const proto = protoOf(value);
    if (isArray(value)) {
      if (proto !== arrayProto || 'toJSON' in value) return false;
      for (let i = 0; i < value.length; i++) if (!plainData(value[i], depth + 1)) return false;
      return true;
    }
    if (proto === dateProto) {
      return dateProto.toJSON === dateToJson && dateProto.toISOString === dateToIso && !hasOwn(value, 'toJSON');
    }
    if ((proto !== objectProto && proto !== null) || 'toJSON' in value) return false;
    const keys = keysOf(value);
    for (let i = 0; i < keys.length; i++) if (!plainData(value[keys[i]], depth + 1)) return false;
    return true;
  };

  class ActionError extends Error {
    constructor(payload) {
      super(payload && typeof payload.message === 'string' ? payload.message : 'action error');
      this.type = 'action_script_runtime_error';
      if (payload !== undefined) this.payload = payload;
    }
  }

  const toBody = (data) => {
    if (data === undefined || data === null) return undefined;
    if (typeof data === 'string') return { kind: 'text', value: data };
    // A Buffer is a Uint8Array: ArrayBuffer.isView covers it without loading Buffer.
    if (ArrayBuffer.isView(data) || data instanceof ArrayBuffer) {
      const view = data instanceof ArrayBuffer ? new Uint8Array(data) : data;
      return { kind: 'base64', value: Buffer().from(view.buffer, view.byteOffset, view.byteLength).toString('base64') };
    }
    const SearchParams = lib.URLSearchParams.peek();
    if (SearchParams && data instanceof SearchParams) return { kind: 'form', value: data.toString() };
    return { kind: 'json', value: data };
  };

  const proxy = async (config) => {
    if (!config || typeof config !== 'object') throw new TypeError('proxy needs a config object');
    const reply = await call('proxy', {
      method: (config.method || 'GET').toUpperCase(),
      endpoint: config.endpoint,
      params: config.params,
      headers: config.headers,
      body: toBody(config.data),
      retries: config.retries,
      retryOn: config.retryOn,
      baseUrlOverride: config.baseUrlOverride,
      decompress: config.decompress,
      responseType: config.responseType,
      connectionId: config.connectionId,
      providerConfigKey: config.providerConfigKey,
    });
    const response = {
      status: reply.status,
      statusText: reply.statusText,
      headers: reply.headers,
      data: reply.base64 === undefined ? reply.data : Buffer().from(reply.base64, 'base64'),
      config,
    };
    if (response.status >= 200 && response.status < 300) return response;
    // As axios (and so Nango's scripts) do: a non-2xx answer is thrown, carrying the response.
    const error = new Error('Request failed with status code ' + response.status);
    error.name = 'AxiosError';
    error.code = response.status >= 500 ? 'ERR_BAD_RESPONSE' : 'ERR_BAD_REQUEST';
    error.status = response.status;
    error.response = response;
    throw error;
  };

  // ---- pagination (Nango's cursor, link and offset styles) ---------------------------------------
  const pick = (object, path) => {
    if (!path) return object;
    let value = object;
    for (const key of String(path).split('.')) {
      if (value === null || value === undefined) return undefined;
      value = value[key];
    }
    return value;
  };
  const nextLink = (header, rel) => {
    if (!header) return undefined;
    for (const part of String(header).split(',')) {
      const match = /<([^>]*)>\s*;(.*)/.exec(part.trim());
      if (match && new RegExp('rel="?' + rel.replace(/[.*+?^$()|[\]\\{}]/g, '\\$&') + '"?', 'i').test(match[2])) return match[1];
    }
    return undefined;
  };
  const toEndpoint = (link) => {
    try {
      const url = new (part('URL'))(link);
      return url.pathname + url.search;
    } catch (e) {
      return link;
    }
  };
  let providerPaginate;
  async function* paginate(config) {
    if (providerPaginate === undefined) providerPaginate = (await call('paginateDefaults', {})) || null;
    const settings = Object.assign({}, providerPaginate || {}, config.paginate || {});
    if (!['cursor', 'link', 'offset'].includes(settings.type)) {
      throw new Error('paginate: no pagination type for this provider; pass paginate.type (cursor, link or offset)');
    }
    const request = Object.assign({}, config, { method: (config.method || 'GET').toUpperCase() });
    const inBody = ['POST', 'PUT', 'PATCH'].includes(request.method);
    const place = () => {
      if (inBody) return (request.data = Object.assign({}, request.data || {}));
      return (request.params = Object.assign({}, typeof request.params === 'object' ? request.params : {}));
    };
    const limit = settings.limit;
    if (limit !== undefined && settings.limit_name_in_request) place()[settings.limit_name_in_request] = limit;
    const pageOf = (response) => {
      const page = pick(response.data, settings.response_path);
      if (!Array.isArray(page)) throw new Error('paginate: the response has no array at "' + (settings.response_path || '') + '"');
      return page;
    };
    if (settings.type === 'cursor') {
      for (;;) {
        const response = await proxy(request);
        const page = pageOf(response);
        if (page.length === 0) return;
        yield page;
        const cursor = pick(response.data, settings.cursor_path_in_response);
        if (cursor === undefined || cursor === null || String(cursor).trim() === '') return;
        place()[settings.cursor_name_in_request] = cursor;
      }
    } else if (settings.type === 'link') {
      for (;;) {
        const response = await proxy(request);
        const page = pageOf(response);
        if (page.length === 0) return;
        yield page;
        const link = settings.link_rel_in_response_header
          ? nextLink(response.headers.link, settings.link_rel_in_response_header)
          : pick(response.data, settings.link_path_in_response_body);
        if (!link) return;
        request.endpoint = toEndpoint(String(link));
        delete request.params;
      }
    } else {
      let offset = Number(settings.offset_start_value || 0);
      for (;;) {
        place()[settings.offset_name_in_request] = String(offset);
        const response = await proxy(request);
        const page = pageOf(response);
        if (page.length === 0) return;
        yield page;
        if (limit !== undefined && page.length < Number(limit)) return;
        offset += settings.offset_calculation_method === 'per-page' ? 1 : page.length;
      }
    }
  }

  // ---- the nango object -------------------------------------------------------------------------
  const levelOf = (args) => {
    const last = args[args.length - 1];
    if (args.length > 1 && last && typeof last === 'object' && Object.keys(last).length === 1 && ['debug', 'info', 'warn', 'error'].includes(last.level)) {
      return [last.level, args.slice(0, -1)];
    }
    return ['info', args];
  };
  // What uncontrolledFetch answers: a fetch Response's reading surface, built from the host's copy.
  class FetchHeaders {
    constructor(entries) {
      this._map = new Map();
      for (const [k, v] of entries) {
        const key = String(k).toLowerCase();
        this._map.set(key, this._map.has(key) ? this._map.get(key) + ', ' + v : String(v));
      }
    }
    get(name) {
      const v = this._map.get(String(name).toLowerCase());
      return v === undefined ? null : v;
    }
    has(name) {
      return this._map.has(String(name).toLowerCase());
    }
    forEach(fn) {
      for (const [k, v] of this._map) fn(v, k, this);
    }
    entries() {
      return this._map.entries();
    }
    keys() {
      return this._map.keys();
    }
    values() {
      return this._map.values();
    }
    [Symbol.iterator]() {
      return this._map.entries();
    }
  }
  const responseOf = (reply) => {
    let used = false;
    const bytes = () => {
      if (used) return Promise.reject(new TypeError('Body is unusable: Body has already been read'));
      used = true;
      return Promise.resolve(Buffer().from(reply.bodyBase64, 'base64'));
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
      json: () => bytes().then((b) => JSON.parse(b.toString('utf8'))),
      arrayBuffer: () => bytes().then((b) => b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)),
    };
  };
  const makeNango = () => {
    const nango = {
      connectionId: meta.connectionId,
      providerConfigKey: meta.providerConfigKey,
      provider: meta.provider,
      activityLogId: meta.invocationId,
      abortSignal,
      ActionError,
      proxy,
      get: (c) => proxy(Object.assign({}, c, { method: 'GET' })),
      post: (c) => proxy(Object.assign({}, c, { method: 'POST' })),
      put: (c) => proxy(Object.assign({}, c, { method: 'PUT' })),
      patch: (c) => proxy(Object.assign({}, c, { method: 'PATCH' })),
      delete: (c) => proxy(Object.assign({}, c, { method: 'DELETE' })),
      paginate,
      getConnection: (providerConfigKey, connectionId) => call('getConnection', { providerConfigKey, connectionId }),
      getToken: () => call('getToken', {}),
      getMetadata: () => call('getMetadata', {}),
      // Nango's node client takes (providerConfigKey, connectionId, metadata); scripts pass only metadata.
      // A connection named anyway must be the run's own (the host checks).
      setMetadata: (metadata, connectionId, providerConfigKey) => call('setMetadata', { metadata, connectionId, providerConfigKey }),
      updateMetadata: (metadata, connectionId, providerConfigKey) => call('updateMetadata', { metadata, connectionId, providerConfigKey }),
      getEnvironmentVariables: () => call('getEnvironmentVariables', {}),
      getWebhookURL: () => call('getWebhookURL', {}),
      log: async (...args) => {
        const [level, rest] = levelOf(args);
        log(level, rest);
      },
      triggerAction: (providerConfigKey, connectionId, actionName, input) =>
        call('triggerAction', { providerConfigKey, connectionId, actionName, input }),
      triggerSync: async (providerConfigKey, connectionId, sync, syncMode) => {
        await call('triggerSync', { providerConfigKey, connectionId, sync, syncMode });
      },
      startSync: async (providerConfigKey, syncs, connectionId) => {
        await call('startSync', { providerConfigKey, syncs, connectionId });
      },
      // Deprecated in Nango: the metadata's fieldMapping, and a metadata write.
      getFieldMapping: async () => {
        const metadata = await call('getMetadata', {});
        return (metadata && metadata.fieldMapping) || {};
      },
      setFieldMapping: (fieldMapping) => call('setMetadata', { metadata: fieldMapping }),
      setLogger: (logger) => {
        const level = logger && logger.level;
        if (!Object.hasOwn(LEVELS, level)) throw new TypeError('setLogger needs { level: "debug" | "info" | "warn" | "error" | "off" }');
        minLevel = LEVELS[level];
      },
      getFlowAttributes: () => (meta.attributes && Object.keys(meta.attributes).length > 0 ? JSON.parse(JSON.stringify(meta.attributes)) : null),
      getIntegration: (queries) => {
        const include = queries && queries.include;
        return call('getIntegration', { include: include === undefined ? [] : Array.isArray(include) ? include : [include] });
      },
      uncontrolledFetch: async (options) => {
        if (!options || typeof options !== 'object' || options.url === undefined) throw new TypeError('uncontrolledFetch needs { url }');
        const body = options.body;
        if (body !== undefined && body !== null && typeof body !== 'string') throw new TypeError('uncontrolledFetch: body must be a string');
        const reply = await call('uncontrolledFetch', {
          url: String(options.url),
          method: String(options.method || 'GET').toUpperCase(),
          headers: options.headers || {},
          body: body === undefined ? null : body,
        });
        return responseOf(reply);
      },
      tryAcquireLock: (options) => call('tryAcquireLock', { key: options && options.key, ttlMs: options && options.ttlMs }),
      releaseLock: (options) => call('releaseLock', { key: options && options.key }),
      releaseAllLocks: async () => {
        await call('releaseAllLocks', {});
      },
      getCheckpoint: () => call('getCheckpoint', {}),
      saveCheckpoint: (checkpoint) => call('saveCheckpoint', { checkpoint }),
      clearCheckpoint: () => call('clearCheckpoint', {}),
      zodValidateInput: async ({ zodSchema, input }) => {
        const result = zodSchema.safeParse(input);
        if (result.success) return result;
        throw new ActionError({ message: 'Invalid input provided', issues: JSON.parse(JSON.stringify(result.error.issues)) });
      },
    };
    if (meta.type === 'sync') {
      const variant = meta.variant;
      nango.variant = variant;
      nango.lastSyncDate = meta.lastSyncDate ? new Date(meta.lastSyncDate) : undefined;
      nango.modelFullName = (model) => (variant === 'base' ? model : model + '::' + variant);

      // Records calls: the host checks the model against the sync's declared ones and scopes everything by
      // the run; here the batch is checked (a clear error before anything is sent) and cut in chunks of 1000.
      const BATCH = 1000;
      const checkModel = (name, model) => {
        if (typeof model !== 'string' || model === '') {
          throw new TypeError('nango.' + name + ' needs the model name as its last argument');
        }
      };
      const write = async (name, records, model) => {
        checkModel(name, model);
        if (!Array.isArray(records)) throw new TypeError('nango.' + name + ' needs an array of records');
        // Per chunk of BATCH: whether all its records are plain data (one odd record sends its chunk as text).
        const asData = [];
        for (let i = 0; i < records.length; i++) {
          const record = records[i];
          const id = record !== null && typeof record === 'object' ? record.id : undefined;
          if (!((typeof id === 'string' && id !== '') || (typeof id === 'number' && isFiniteNumber(id)))) {
            throw new TypeError('nango.' + name + ': record ' + i + ' of model "' + model + '" has no id; every record needs an "id" (a non-empty string or a number)');
          }
          const chunk = (i / BATCH) | 0;
          if (asData[chunk] !== false) asData[chunk] = plainData(record, 0);
        }
        for (let i = 0; i < records.length; i += BATCH) {
          await call(name, { model, records: records.slice(i, i + BATCH) }, asData[(i / BATCH) | 0]);
        }
        return true;
      };
      nango.batchSave = (records, model) => write('batchSave', records, model);
      // Deprecated in Nango, same as batchSave.
      nango.batchSend = nango.batchSave;
      nango.batchUpdate = (records, model) => write('batchUpdate', records, model);
      nango.batchDelete = (records, model) => write('batchDelete', records, model);
      nango.getRecordsByIds = async (ids, model) => {
        checkModel('getRecordsByIds', model);
        if (!Array.isArray(ids)) throw new TypeError('nango.getRecordsByIds needs an array of ids');
        const found = new Map();
        for (let i = 0; i < ids.length; i += 100) {
          // Keyed by the ids as the script gave them (numbers stay numbers), as Nango's Map is.
          const asGiven = new Map(ids.slice(i, i + 100).map((id) => [String(id), id]));
          const records = await call('getRecordsByIds', { model, ids: Array.from(asGiven.keys()) });
          for (const record of records) {
            if (asGiven.has(record.id)) found.set(asGiven.get(record.id), record);
          }
        }
        return found;
      };
      // Nango's two forms: listRecords({ model, cursor?, limit? }) → { records, next_cursor } (a page), and
      // the SDK's listRecords(model, { cursor? }), an async generator over every record from the cursor on.
      const listPage = async (model, cursor, limit) => {
        checkModel('listRecords', model);
        return call('listRecords', { model, cursor: cursor || null, limit: limit === undefined ? 100 : limit });
      };
      nango.listRecords = (modelOrOptions, options) => {
        if (modelOrOptions && typeof modelOrOptions === 'object') {
          return listPage(modelOrOptions.model, modelOrOptions.cursor, modelOrOptions.limit);
        }
        return (async function* () {
          let cursor = options && options.cursor;
          for (;;) {
            const page = await listPage(modelOrOptions, cursor, 100);
            for (const record of page.records) yield record;
            if (!page.next_cursor) return;
            cursor = page.next_cursor;
          }
        })();
      };
      nango.trackDeletesStart = async (model) => {
        checkModel('trackDeletesStart', model);
        await call('trackDeletesStart', { model });
      };
      const deleteUnseen = async (name, model) => {
        checkModel(name, model);
        const { deletedKeys } = await call(name, { model });
        return { deletedKeys };
      };
      nango.trackDeletesEnd = (model) => deleteUnseen('trackDeletesEnd', model);
      nango.deleteRecordsFromPreviousExecutions = (model) => deleteUnseen('deleteRecordsFromPreviousExecutions', model);
      nango.setMergingStrategy = async (merging, model) => {
        checkModel('setMergingStrategy', model);
        await call('setMergingStrategy', { model, strategy: merging && merging.strategy });
      };
    }
    return nango;
  };
  let nango;

  // ---- running the bundle -----------------------------------------------------------------------
  // Nango's allow-list (url, crypto, zod, botbuilder, soap, unzipper; FUNCTION_MODULES in contracts).
  const requireModule = (name) => {
    if (name === 'zod') return zod();
    if (name === 'url' || name === 'node:url') {
      return { URL: part('URL'), URLSearchParams: part('URLSearchParams') };
    }
    if (name === 'crypto' || name === 'node:crypto') return crypto();
    if (name === 'unzipper') return unzipper();
    if (name === 'soap') return soap();
    if (name === 'botbuilder') return botbuilder();
    throw new Error('Cannot find module "' + name + '": functions may require only zod, url, crypto, unzipper, soap and botbuilder');
  };
  const plain = (value) => {
    try {
      const json = JSON.stringify(value);
      return json === undefined ? undefined : JSON.parse(json);
    } catch (e) {
      return undefined;
    }
  };
  const MESSAGE_CHARS = 4000;
  const failure = (code, message, extra) =>
    JSON.stringify(Object.assign({ status: 'failure', code, message: String(message).slice(0, MESSAGE_CHARS) }, extra || {}));
  const describe = (error) => {
    if (error && error.type === 'action_script_runtime_error') {
      return failure('action_script_runtime_error', error.message || 'action error', { payload: plain(error.payload) });
    }
    if (error && hostErrors.has(error)) {
      if (error.code === 'script_forbidden_call') return failure('script_forbidden_call', error.message);
      return failure('script_runtime_error', error.message, { cause: { code: String(error.code) } });
    }
    // The isolate's allocator refusing a typed array is the memory limit, even if V8 lets the script see it.
    if (error instanceof RangeError && /allocation failed/.test(error.message)) {
      return failure('script_memory_limit', 'the function ran out of memory: ' + error.message);
    }
    // An action's error also gives its name and message apart: the API answers them as Nango's runner does.
    const thrownPayload = (name, message) =>
      meta.type === 'action' ? { payload: { name, message: String(message).slice(0, MESSAGE_CHARS) } } : undefined;
    if (error instanceof Error) {
      const name = error.name || 'Error';
      return failure('script_runtime_error', name + ': ' + error.message, thrownPayload(name, error.message));
    }
    const thrown = plain(error) === undefined ? String(error) : JSON.stringify(plain(error));
    return failure('script_runtime_error', 'the function threw ' + thrown, thrownPayload('Error', thrown));
  };

  const module = { exports: {} };
  let loaded = false;
  let loadFailure;
  const load = () => {
    if (!loaded) {
      loaded = true;
      try {
        g.__factory(module, module.exports, requireModule);
      } catch (error) {
        loadFailure = failure('script_load_error', 'the bundle threw while loading: ' + (error && error.message ? error.message : String(error)));
      } finally {
        delete g.__factory;
      }
    }
    return loadFailure !== undefined ? 'threw' : early ? 'early' : 'ok';
  };

  const start = async (inputJson) => {
    load();
    if (loadFailure !== undefined) return loadFailure;
    const def = module.exports && (module.exports.default || module.exports);
    // A sync's webhook handler: zero-yaml createSync({ onWebhook }), or a legacy script's named export.
    const webhookHandler =
      meta.entry === 'onWebhook'
        ? (def && typeof def.onWebhook === 'function' && def.onWebhook) ||
          (module.exports && typeof module.exports.onWebhookPayloadReceived === 'function' && module.exports.onWebhookPayloadReceived)
        : undefined;
    if (meta.entry === 'onWebhook' && !webhookHandler) {
      return failure('script_load_error', 'the bundle has no webhook handler (onWebhook or onWebhookPayloadReceived)');
    }
    // A zero-yaml definition's exec, or a legacy script's default-exported function (fetchData(nango),
    // runAction(nango, input), an on-event script), as bundles of older CLIs export them.
    const exec =
      def && typeof def.exec === 'function'
        ? (...args) => def.exec(...args)
        : typeof def === 'function'
          ? (...args) => def(...args)
          : undefined;
    if (!webhookHandler && !exec) {
      return failure('script_load_error', 'the bundle does not export a function definition with exec() or a default function');
    }
    const input = inputJson === undefined ? undefined : JSON.parse(inputJson);
    try {
      let output;
      if (webhookHandler) {
        output = await webhookHandler(nango, input);
      } else if (meta.type === 'action') {
        if (def.input && typeof def.input.safeParse === 'function') {
          const parsed = def.input.safeParse(input);
          if (!parsed.success) {
            return failure('script_invalid_input', 'the input does not match the action\'s input schema', {
              payload: plain(parsed.error.issues),
            });
          }
        }
        output = await exec(nango, input);
        if (def.output && typeof def.output.safeParse === 'function') {
          const parsed = def.output.safeParse(output);
          if (!parsed.success) {
            return failure('script_invalid_output', 'the output does not match the action\'s output schema', {
              payload: plain(parsed.error.issues),
            });
          }
        }
      } else {
        // on-event scripts and syncs (a sync's onWebhook comes with webhook runs).
        output = await exec(nango);
      }
      let json;
      try {
        json = JSON.stringify(output);
      } catch (error) {
        return failure('script_runtime_error', 'the output is not JSON: ' + error.message);
      }
      // Characters never outnumber UTF-8 bytes: over the limit here is over it for sure, and is not copied out.
      if (json !== undefined && json.length > meta.outputLimitBytes) {
        return failure('script_output_too_large', 'the output is over ' + meta.outputLimitBytes + ' bytes');
      }
      return JSON.stringify({ status: 'success' }).slice(0, -1) + (json === undefined ? '}' : ',"output":' + json + '}');
    } catch (error) {
      return describe(error);
    }
  };

  // ---- what the host calls (through its reference to control) ------------------------------------------
  const PARTS = ['zod', 'URL', 'URLSearchParams', 'Buffer', 'fflate', 'soap'];
  const bind = (call, logRef, sleepRef, metaJson) => {
    if (bound) return 'bound';
    hostCall = call;
    hostLog = logRef;
    hostSleep = sleepRef;
    meta = JSON.parse(metaJson);
    nango = makeNango();
    bound = true;
    return early ? 'early' : 'ok';
  };
  const warm = (parts) => {
    for (const name of String(parts).split(',')) {
      if (name === 'zod') configureZod();
      else if (PARTS.includes(name)) lib[name]();
    }
  };
  // Read after the run by the host, whatever the script did to this context's built-ins: plain loops only.
  // Only what the script reached for counts, not what warm evaluated (a part it stops using is dropped).
  const used = () => {
    let out = '';
    for (let i = 0; i < PARTS.length; i++) if (touched[PARTS[i]] === true) out += (out ? ',' : '') + PARTS[i];
    return out;
  };
  // Bind and start in one crossing, for a context whose bundle is loaded already (a ready context): a
  // context that cannot take the run answers what bind said after a NUL (a result is JSON, never so).
  const run = async (call, logRef, sleepRef, metaJson, inputJson) => {
    const taken = bind(call, logRef, sleepRef, metaJson);
    return taken === 'ok' ? start(inputJson) : '\u0000' + taken;
  };
  return function control(op, a, b, c, d, e) {
    if (op === 'run') return run(a, b, c, d, e);
    if (op === 'bind') return bind(a, b, c, d);
    if (op === 'load') return load();
    if (op === 'start') return start(a);
    if (op === 'abort') return abort(a);
    if (op === 'warm') return warm(a);
    if (op === 'used') return used();
    throw new Error('unknown control ' + op);
  };
})();
`;
