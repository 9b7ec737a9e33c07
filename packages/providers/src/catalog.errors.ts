export const CATALOG_ERROR_CODES = ['catalog_unreadable', 'catalog_invalid'] as const;
export type CatalogErrorCode = (typeof CATALOG_ERROR_CODES)[number];

/** One thing wrong with a catalog file, located as precisely as we can: file, provider key, field path. */
export interface CatalogProblem {
  file: string;
  provider?: string;
  /** Dotted field path inside the provider entry, e.g. `proxy.retry.error_code[0]`; empty for the whole entry. */
  path: string;
  message: string;
}

export function formatProblem(problem: CatalogProblem): string {
  const where = [problem.provider, problem.path]
    .filter((part) => part !== undefined && part !== '')
    .join('.');
  return where ? `${problem.file}: ${where}: ${problem.message}` : `${problem.file}: ${problem.message}`;
}

/** Thrown by `loadCatalog`; the message lists every problem, so a boot log or a build log says it all. */
export class ProviderCatalogError extends Error {
  override name = 'ProviderCatalogError';

  constructor(
    readonly code: CatalogErrorCode,
    readonly problems: readonly CatalogProblem[],
  ) {
    const count = problems.length === 1 ? '1 problem' : `${problems.length} problems`;
    super(
      `provider catalog is invalid (${count}):\n${problems.map((p) => `  - ${formatProblem(p)}`).join('\n')}`,
    );
  }
}
