/**
 * The value at a dot path of a provider's JSON answer (`data.token`), or undefined when any step is missing.
 * A step may pick an array's element by one of its fields, `accounts[is_default=true]` (the first element
 * whose field, as text, is that value): DocuSign lists a user's accounts and flags the default one.
 */
export function valueAtPath(object: Record<string, unknown>, path: string): unknown {
  let current: unknown = object;
  for (const part of path.split('.')) {
    const step = /^([^[\]]+)\[([^=[\]]+)=([^[\]]*)\]$/.exec(part);
    current = child(current, step ? step[1]! : part);
    if (step)
      current = Array.isArray(current)
        ? current.find((item) => fieldIs(item, step[2]!, step[3]!))
        : undefined;
  }
  return current;
}

function child(current: unknown, key: string): unknown {
  if (typeof current !== 'object' || current === null) return undefined;
  return (current as Record<string, unknown>)[key];
}

function fieldIs(item: unknown, field: string, value: string): boolean {
  const found = child(item, field);
  return (
    (typeof found === 'string' || typeof found === 'number' || typeof found === 'boolean') &&
    String(found) === value
  );
}
