/**
 * Whether a structured copy of a value gives the host exactly what JSON.stringify would give it: only
 * strings, numbers, booleans, null, undefined, arrays and objects of plain prototypes without a toJSON
 * (the host serialises what it gets as JSON; undefined and NaN come out as JSON.stringify puts them),
 * and Dates while Date.prototype.toJSON is the one it was (the host's own gives the same ISO text).
 * Anything else (class instances, Maps, functions, symbols, bigints, typed arrays, a cycle or anything
 * nested deeper than PLAIN_DEPTH) goes as JSON text, with JSON.stringify's own result or error.
 *
 * The built-ins are taken when the prelude is evaluated, before any script: a script that replaces them
 * later does not change the answer.
 */
export const PLAIN_DEPTH = 64;
const objectProto = Object.prototype;
const arrayProto = Array.prototype;
const dateProto = Date.prototype;
const dateToJson = Date.prototype.toJSON;
const dateToIso = Date.prototype.toISOString;
const hasOwn = Object.hasOwn;
const protoOf = Object.getPrototypeOf;
const keysOf = Object.keys;
const isArray = Array.isArray;

export function plainData(value: unknown, depth = 0): boolean {
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
  const proto: unknown = protoOf(value);
  if (isArray(value)) {
    if (proto !== arrayProto || 'toJSON' in value) return false;
    for (let i = 0; i < value.length; i++) if (!plainData(value[i], depth + 1)) return false;
    return true;
  }
  if (proto === dateProto) {
    return dateProto.toJSON === dateToJson && dateProto.toISOString === dateToIso && !hasOwn(value, 'toJSON');
  }
  if ((proto !== objectProto && proto !== null) || 'toJSON' in value) return false;
  const record = value as Record<string, unknown>;
  const keys = keysOf(record);
  for (let i = 0; i < keys.length; i++) if (!plainData(record[keys[i]!], depth + 1)) return false;
  return true;
}
