/** The value at a dot path of a provider's JSON answer (`data.token`), or undefined when any step is missing. */
export function valueAtPath(object: Record<string, unknown>, path: string): unknown {
  let current: unknown = object;
  for (const part of path.split('.')) {
    if (typeof current !== 'object' || current === null) return undefined;
    current = (current as Record<string, unknown>)[part];
  }
  return current;
}
