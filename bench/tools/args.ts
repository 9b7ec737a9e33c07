/** The bench's `--name=value` flags (a bare `--name` is `'true'`), and a numeric reader with a default. */
export function benchArgs(argv: readonly string[] = process.argv.slice(2)): {
  args: Map<string, string>;
  num: (name: string, fallback: number) => number;
} {
  const args = new Map(
    argv
      .filter((a) => a.startsWith('--'))
      .map((a) => {
        const [k, v] = a.slice(2).split('=');
        return [k ?? '', v ?? 'true'] as const;
      }),
  );
  return { args, num: (name, fallback) => Number(args.get(name) ?? fallback) };
}
