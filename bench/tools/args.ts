/** The bench's `--name=value` flags (a bare `--name` is `'true'`), and a numeric reader with a default. */
export function benchArgs(argv: readonly string[] = process.argv.slice(2)): {
  args: Map<string, string>;
  num: (name: string, fallback: number) => number;
} {
  const args = new Map(
    argv
      .filter((a) => a.startsWith('--'))
      .map((a) => {
        // Split at the first '=' only: a value may hold one (`--runtime-node-options=--flag=1`).
        const eq = a.indexOf('=');
        return eq < 0 ? ([a.slice(2), 'true'] as const) : ([a.slice(2, eq), a.slice(eq + 1)] as const);
      }),
  );
  return { args, num: (name, fallback) => Number(args.get(name) ?? fallback) };
}
