import path from 'node:path';
import { loadCatalog, writeCompiledCatalog } from './catalog';
import { ProviderCatalogError } from './catalog.errors';
import { coverageProblems } from './coverage';

/**
 * `node dist/validate-cli.js [overrides.yaml]`: loads the built-in catalog (plus an operator's file when
 * given) and exits non-zero listing every problem. The package build runs it, so a bad catalog never ships;
 * without an operator's file it also writes the checked catalog that services start from
 * (`writeCompiledCatalog`).
 */
function main(argv: readonly string[]): number {
  const extraFile = argv[2];
  try {
    if (extraFile === undefined) writeCompiledCatalog();
    const catalog = loadCatalog(extraFile === undefined ? {} : { overridesFile: path.resolve(extraFile) });
    const problems = coverageProblems(catalog);
    if (problems.length > 0) {
      process.stderr.write(
        `provider catalog is incomplete:\n${problems.map((p) => `  - ${p}`).join('\n')}\n`,
      );
      return 1;
    }
    const suffix = extraFile === undefined ? '' : ` (including ${path.resolve(extraFile)})`;
    process.stdout.write(`provider catalog OK: ${catalog.size} providers${suffix}\n`);
    return 0;
  } catch (error) {
    if (error instanceof ProviderCatalogError) {
      process.stderr.write(`${error.message}\n`);
      return 1;
    }
    throw error;
  }
}

process.exitCode = main(process.argv);
