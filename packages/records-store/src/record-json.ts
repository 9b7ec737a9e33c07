import type { StoredRecord } from './records.types';

const COMMA = 0x2c;
const CLOSE_BRACE = 0x7d;
const METADATA_KEY = Buffer.from('"_nango_metadata"');

/**
 * A record's JSON as `JSON.stringify({...payload, id: externalId, _nango_metadata})` writes it, in one or
 * two chunks (the saved bytes, text). The usual case (the payload's first key is `id`, already that string, and it has no
 * `_nango_metadata` key) is spliced from the saved bytes, never decoded to text; anything else goes through
 * JSON.parse and JSON.stringify.
 */
export function recordJson(
  payload: Buffer | null,
  externalId: string,
  metadata: StoredRecord['_nango_metadata'],
): (Buffer | string)[] {
  const meta = JSON.stringify(metadata);
  const head = `{"id":${JSON.stringify(externalId)}`;
  if (payload === null) return [`${head},"_nango_metadata":${meta}}`];
  const headLength = Buffer.byteLength(head);
  const next = payload[headLength];
  if (
    (next === COMMA || next === CLOSE_BRACE) &&
    payload[payload.length - 1] === CLOSE_BRACE &&
    startsWith(payload, head, headLength) &&
    payload.indexOf(METADATA_KEY) < 0
  ) {
    return [payload.subarray(0, -1), `,"_nango_metadata":${meta}}`];
  }
  return [
    JSON.stringify({
      ...(JSON.parse(payload.toString('utf8')) as Record<string, unknown>),
      id: externalId,
      _nango_metadata: metadata,
    }),
  ];
}

/**
 * Whether `bytes` begin with `text`'s UTF-8 (`byteLength` long). ASCII text, the usual id, is compared as
 * latin1 (one character per byte, so equal text means equal bytes) without encoding it to a Buffer.
 */
function startsWith(bytes: Buffer, text: string, byteLength: number): boolean {
  if (bytes.length < byteLength) return false;
  if (byteLength === text.length) return bytes.toString('latin1', 0, byteLength) === text;
  return bytes.subarray(0, byteLength).equals(Buffer.from(text));
}
