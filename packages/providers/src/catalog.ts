import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseDocument } from 'yaml';
import type { z } from 'zod';
import { type CatalogProblem, ProviderCatalogError } from './catalog.errors';
import {
  PROVIDER_KEY_PATTERN,
  type ProviderDefinition,
  ProviderDefinitionSchema,
  type ProviderEntry,
  ProviderEntrySchema,
} from './schema';

/**
 * The catalog shipped with the package. Resolved from this file's directory, which is `src/` under jest
 * and `dist/` once built; both sit next to `catalog/`.
 */
export const BUILT_IN_CATALOG_PATH = path.resolve(__dirname, '..', 'catalog', 'providers.yaml');

/**
 * The built-in catalog as the package build leaves it, parsed and checked (`writeCompiledCatalog`): a
 * service starts by reading it instead of parsing and validating the YAML again. It names the YAML text it
 * was made from; a catalog edited after the build is parsed as before.
 */
export const COMPILED_CATALOG_PATH = path.resolve(__dirname, '..', 'dist', 'catalog.compiled.json');

/** The variable apps read (in their own env schema) to find an operator's overrides file. */
export const PROVIDERS_FILE_ENV = 'SWITCHBOARD_PROVIDERS_FILE';

export type ResolvedProvider = ProviderDefinition & { name: string };

export interface ProviderCatalog {
  get(name: string): ResolvedProvider | undefined;
  /** Sorted by key. `search` matches key or display name, case-insensitively, as plain text. */
  list(search?: string): ResolvedProvider[];
  names(): string[];
  readonly size: number;
}

export interface LoadCatalogOptions {
  /** An operator's catalog file: same schema; an existing key is replaced, a new key is added. */
  overridesFile?: string;
}

// A catalog is small; this only stops a hostile file from expanding anchors into gigabytes.
const MAX_YAML_ALIASES = 200;

export function loadCatalog(opts: LoadCatalogOptions = {}): ProviderCatalog {
  const builtIn = loadBuiltIn();
  const providers = new Map(builtIn.definitions);

  if (opts.overridesFile !== undefined) {
    const overrides = readCatalogFile(path.resolve(opts.overridesFile));
    const resolved = resolveFile(
      overrides,
      (key) => {
        const entry = builtIn.entries.get(key);
        return entry ? { file: BUILT_IN_CATALOG_PATH, entry } : undefined;
      },
      ' nor in the built-in catalog',
    );
    for (const [name, definition] of resolved) providers.set(name, definition);
  }

  return new InMemoryProviderCatalog(providers);
}

/** The built-in catalog: its entries as written (for overrides' aliases) and resolved. */
interface BuiltInCatalog {
  /** sha256 of the YAML text. */
  source: string;
  entries: Map<string, ProviderEntry>;
  definitions: Map<string, ProviderDefinition>;
}

interface CompiledCatalog {
  source: string;
  entries: Record<string, ProviderEntry>;
  definitions: Record<string, ProviderDefinition>;
}

function loadBuiltIn(): BuiltInCatalog {
  const text = readCatalogText(BUILT_IN_CATALOG_PATH);
  return readCompiledCatalog(sourceOf(text)) ?? compileBuiltIn(text);
}

/** What names the YAML text a compiled catalog was made from. */
function sourceOf(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function compileBuiltIn(text: string): BuiltInCatalog {
  const file = parseCatalogText(BUILT_IN_CATALOG_PATH, text);
  return {
    source: sourceOf(text),
    entries: file.entries,
    definitions: resolveFile(file, () => undefined, ''),
  };
}

/** The compiled catalog if there is one made from this YAML text (`source`); anything else is ignored. */
function readCompiledCatalog(source: string): BuiltInCatalog | undefined {
  let compiled: CompiledCatalog;
  try {
    compiled = JSON.parse(readFileSync(COMPILED_CATALOG_PATH, 'utf8')) as CompiledCatalog;
  } catch {
    return undefined;
  }
  if (compiled.source !== source) return undefined;
  return {
    source,
    entries: new Map(Object.entries(compiled.entries)),
    definitions: new Map(Object.entries(compiled.definitions)),
  };
}

/**
 * Parses and checks the built-in catalog (throwing its problems) and writes it to `COMPILED_CATALOG_PATH`,
 * for services to start from. The package build runs it (`validate-cli`).
 */
export function writeCompiledCatalog(): void {
  const builtIn = compileBuiltIn(readCatalogText(BUILT_IN_CATALOG_PATH));
  const compiled: CompiledCatalog = {
    source: builtIn.source,
    entries: Object.fromEntries(builtIn.entries),
    definitions: Object.fromEntries(builtIn.definitions),
  };
  writeFileSync(COMPILED_CATALOG_PATH, JSON.stringify(compiled));
}

interface CatalogFile {
  file: string;
  /** Entries that passed the per-entry schema. */
  entries: Map<string, ProviderEntry>;
  /** Keys present in the file whose entry failed; their problems are already in `problems`. */
  rejected: Set<string>;
  problems: CatalogProblem[];
}

function readCatalogText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ProviderCatalogError('catalog_unreadable', [
      { file, path: '', message: `cannot be read: ${reason}` },
    ]);
  }
}

function readCatalogFile(file: string): CatalogFile {
  return parseCatalogText(file, readCatalogText(file));
}

function parseCatalogText(file: string, text: string): CatalogFile {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new ProviderCatalogError(
      'catalog_invalid',
      doc.errors.map((error) => ({ file, path: '', message: `is not valid YAML: ${error.message}` })),
    );
  }
  let raw: unknown;
  try {
    raw = doc.toJS({ maxAliasCount: MAX_YAML_ALIASES }) ?? {};
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ProviderCatalogError('catalog_invalid', [
      { file, path: '', message: `is not valid YAML: ${reason}` },
    ]);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ProviderCatalogError('catalog_invalid', [
      { file, path: '', message: 'must be a mapping of provider key to provider entry' },
    ]);
  }

  // Each entry is checked on its own so that one broken entry does not hide the problems of the others.
  const catalog: CatalogFile = { file, entries: new Map(), rejected: new Set(), problems: [] };
  for (const [key, value] of Object.entries(raw)) {
    if (!PROVIDER_KEY_PATTERN.test(key)) {
      catalog.rejected.add(key);
      catalog.problems.push({
        file,
        provider: key,
        path: '',
        message: 'provider keys are lowercase words joined by "-"',
      });
      continue;
    }
    const parsed = ProviderEntrySchema.safeParse(value);
    if (parsed.success) {
      catalog.entries.set(key, parsed.data);
    } else {
      catalog.rejected.add(key);
      catalog.problems.push(...toProblems(file, key, parsed.error.issues));
    }
  }
  return catalog;
}

interface SourcedEntry {
  file: string;
  entry: ProviderEntry;
}

/**
 * Resolves aliases (shallow merge, `{...target, ...entry}`) and validates every merged entry. A target
 * is looked up in the same file first, then through `fallback` (the built-in catalog, for overrides).
 * Chains are refused: the merge would otherwise depend on resolution order.
 */
function resolveFile(
  catalog: CatalogFile,
  fallback: (key: string) => SourcedEntry | undefined,
  fallbackLabel: string,
): Map<string, ProviderDefinition> {
  const { file, entries, rejected } = catalog;
  const problems = [...catalog.problems];
  const resolved = new Map<string, ProviderDefinition>();
  const failed = new Set(rejected);

  const validate = (name: string, candidate: unknown, context: string): void => {
    const parsed = ProviderDefinitionSchema.safeParse(candidate);
    if (parsed.success) {
      resolved.set(name, parsed.data);
      return;
    }
    failed.add(name);
    for (const problem of toProblems(file, name, parsed.error.issues)) {
      problems.push({ ...problem, message: problem.message + context });
    }
  };

  for (const [name, entry] of entries) {
    if (entry.alias === undefined) validate(name, entry, '');
  }
  for (const [name, entry] of entries) {
    const alias = entry.alias;
    if (alias === undefined) continue;
    // The target's own problems are already reported; repeating them for every alias adds only noise.
    if (alias !== name && failed.has(alias)) continue;
    const inFile = alias !== name ? entries.get(alias) : undefined;
    const target = inFile === undefined ? fallback(alias) : { file, entry: inFile };
    if (target === undefined) {
      const where =
        alias === name
          ? 'its own key, which only patches a built-in provider of that name (there is none)'
          : `"${alias}", which is not a provider in ${file}${fallbackLabel}`;
      problems.push({ file, provider: name, path: 'alias', message: `refers to ${where}` });
      continue;
    }
    if (target.entry.alias !== undefined) {
      problems.push({
        file,
        provider: name,
        path: 'alias',
        message: `refers to "${alias}", which is itself an alias of "${target.entry.alias}"; alias chains are not supported, point at "${target.entry.alias}" instead`,
      });
      continue;
    }
    const merged: Record<string, unknown> = { ...target.entry, ...entry };
    // `x: { alias: x }` in an overrides file means "patch the built-in x"; the result is not an alias.
    if (alias === name) delete merged['alias'];
    validate(name, merged, ` (after merging "${name}" over alias "${alias}")`);
  }

  if (problems.length > 0) throw new ProviderCatalogError('catalog_invalid', problems);
  return resolved;
}

function formatPath(segments: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of segments) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out === '' ? String(segment) : `.${String(segment)}`;
  }
  return out;
}

function issueMessage(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_key') return issue.issues.map((inner) => inner.message).join('; ');
  return issue.message;
}

/** Turns zod issues about one provider entry into problems located by field path. */
function toProblems(file: string, provider: string, issues: readonly z.core.$ZodIssue[]): CatalogProblem[] {
  return issues.map((issue) => {
    const segments = [...issue.path];
    if (issue.code === 'unrecognized_keys' && issue.keys.length === 1) segments.push(issue.keys[0] as string);
    return { file, provider, path: formatPath(segments), message: issueMessage(issue) };
  });
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

class InMemoryProviderCatalog implements ProviderCatalog {
  private readonly byName: ReadonlyMap<string, ResolvedProvider>;
  private readonly sorted: readonly ResolvedProvider[];
  /** Lower-cased `key NUL display name` of each provider of `sorted`, built once: a search only scans it. */
  private readonly searchIndex: readonly string[];

  constructor(definitions: ReadonlyMap<string, ProviderDefinition>) {
    const entries = [...definitions.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, definition]): [string, ResolvedProvider] => [name, deepFreeze({ name, ...definition })]);
    this.byName = new Map(entries);
    this.sorted = entries.map(([, provider]) => provider);
    this.searchIndex = this.sorted.map((provider) =>
      `${provider.name}\u0000${provider.display_name}`.toLowerCase(),
    );
  }

  get size(): number {
    return this.byName.size;
  }

  get(name: string): ResolvedProvider | undefined {
    return this.byName.get(name);
  }

  list(search?: string): ResolvedProvider[] {
    const needle = search?.trim().toLowerCase();
    if (!needle) return [...this.sorted];
    // A needle never holds NUL (trimmed user text), so a match never spans key and display name.
    if (needle.includes('\u0000')) return [];
    return this.sorted.filter((_provider, index) => this.searchIndex[index]!.includes(needle));
  }

  names(): string[] {
    return this.sorted.map((provider) => provider.name);
  }
}
