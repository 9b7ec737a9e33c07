/** Element type oids a binary array names (Postgres checks them against the parameter's). */
const TEXT_OID = 25;
const BYTEA_OID = 17;

/**
 * A `text[]` parameter in Postgres's binary array format (node-postgres sends a Buffer parameter as
 * binary). For a chunk's sealed payloads the server's parse of the text literal (`{"…","…"}`) was
 * half of the upsert's CPU, many times this format's (bench/README.md, "Why the current settings"); the elements
 * need no escaping either. Layout (array_recv): ndim, has-nulls flag, element oid, then per dimension its
 * length and lower bound, then each element's byte length and bytes.
 */
export function binaryTextArray(values: readonly string[]): Buffer {
  const lengths = values.map((v) => Buffer.byteLength(v, 'utf8'));
  const { out, at: start } = arrayHeader(TEXT_OID, lengths);
  let at = start;
  values.forEach((value, i) => {
    at = out.writeInt32BE(lengths[i]!, at);
    at += out.write(value, at, 'utf8');
  });
  return out;
}

/** A `bytea[]` parameter in the same format: each element's bytes as they are (no hex, no escaping). */
export function binaryByteaArray(values: readonly Buffer[]): Buffer {
  const { out, at: start } = arrayHeader(
    BYTEA_OID,
    values.map((v) => v.length),
  );
  let at = start;
  for (const value of values) {
    at = out.writeInt32BE(value.length, at);
    at += value.copy(out, at);
  }
  return out;
}

/** A one-dimensional array without NULLs of elements this long: the buffer, header written, and where they go. */
function arrayHeader(oid: number, lengths: readonly number[]): { out: Buffer; at: number } {
  if (lengths.length === 0) {
    const empty = Buffer.alloc(12);
    empty.writeInt32BE(oid, 8);
    return { out: empty, at: 12 };
  }
  const out = Buffer.allocUnsafe(lengths.reduce((sum, length) => sum + 4 + length, 20));
  out.writeInt32BE(1, 0);
  out.writeInt32BE(0, 4);
  out.writeInt32BE(oid, 8);
  out.writeInt32BE(lengths.length, 12);
  out.writeInt32BE(1, 16);
  return { out, at: 20 };
}
