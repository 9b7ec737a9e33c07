/**
 * How deeply JSON may nest where it enters from outside (HTTP bodies, provider webhooks). Real payloads
 * stay far below (provider webhooks rarely pass 20 levels); a 10,000-level array would overflow the stack
 * of every recursive walk after `JSON.parse` (NUL checks, validation, `JSON.stringify`).
 */
export const DEFAULT_JSON_MAX_DEPTH = 64;

/**
 * How deeply a NATS payload may nest: the outside limit plus room for the envelopes our services wrap
 * around a body (a request's fields, an event, an output).
 */
export const MESSAGE_JSON_MAX_DEPTH = 128;

const OPEN_BRACKET = 0x5b;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACKET = 0x5d;
const CLOSE_BRACE = 0x7d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Whether JSON text nests arrays and objects more than `maxDepth` levels deep, read from the raw text in
 * one pass without recursion and without parsing (brackets inside strings do not count: a string is
 * skipped to its closing quote with `indexOf`). Invalid JSON is not judged here: `JSON.parse` refuses it
 * after. Bytes are read as UTF-8, whose multi-byte sequences never contain an ASCII bracket or quote.
 * A quarter to a half of the time `JSON.parse` takes for the same text (8 µs against 17 µs for a 1.3 KB
 * webhook on a loaded 2-core machine).
 */
export function jsonDepthExceeds(json: string | Uint8Array, maxDepth: number): boolean {
  // Two loops rather than one over a union: each stays monomorphic (twice as fast).
  return typeof json === 'string' ? textExceeds(json, maxDepth) : bytesExceeds(json, maxDepth);
}

function textExceeds(text: string, maxDepth: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // To the closing quote: the next one not escaped by an odd number of backslashes.
      for (;;) {
        i = text.indexOf('"', i + 1);
        if (i === -1) return false;
        let backslashes = 0;
        while (text.charCodeAt(i - 1 - backslashes) === BACKSLASH) backslashes++;
        if (backslashes % 2 === 0) break;
      }
    } else if (c === OPEN_BRACKET || c === OPEN_BRACE) {
      if (++depth > maxDepth) return true;
    } else if (c === CLOSE_BRACKET || c === CLOSE_BRACE) {
      depth--;
    }
  }
  return false;
}

function bytesExceeds(bytes: Uint8Array, maxDepth: number): boolean {
  let depth = 0;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i];
    if (c === QUOTE) {
      for (;;) {
        i = bytes.indexOf(QUOTE, i + 1);
        if (i === -1) return false;
        let backslashes = 0;
        while (bytes[i - 1 - backslashes] === BACKSLASH) backslashes++;
        if (backslashes % 2 === 0) break;
      }
    } else if (c === OPEN_BRACKET || c === OPEN_BRACE) {
      if (++depth > maxDepth) return true;
    } else if (c === CLOSE_BRACKET || c === CLOSE_BRACE) {
      depth--;
    }
  }
  return false;
}

/** The message of a refusal for nesting deeper than `maxDepth` (the same words everywhere). */
export function jsonTooDeepMessage(what: string, maxDepth: number): string {
  return `${what} nests arrays or objects more than ${maxDepth} levels deep`;
}
