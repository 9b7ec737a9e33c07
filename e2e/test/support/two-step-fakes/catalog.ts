import { loadCatalog } from '@switchboard/providers';
import { type TwoStepCase, TWO_STEP_TTL_SECONDS } from './case';
import { TWO_STEP_CASES } from './cases';

const ORIGIN = /https:\/\/[^/\s]+/g;
const built = loadCatalog();

/** The catalog entry of a case; every row names a real provider. */
export function catalogEntry(provider: string) {
  const entry = built.get(provider);
  if (!entry) throw new Error(`${provider} is not in the catalog`);
  return entry;
}

/** Every provider of the built-in catalog whose auth mode is TWO_STEP. */
export function catalogTwoStepProviders(): string[] {
  return built.names().filter((name) => catalogEntry(name).auth_mode === 'TWO_STEP');
}

const fillParams = (template: string, c: TwoStepCase) =>
  template.replace(/\$\{connectionConfig\.([A-Za-z0-9_]+)\}/g, (_, name: string) => c.params[name] ?? '');

/** The endpoint to ask the proxy for so that the provider receives the row's API path. */
export function proxiedEndpoint(c: TwoStepCase): string {
  // The base path as the fake sees it: the template's origin (host fields included) becomes the fake's.
  const template = (catalogEntry(c.provider).proxy?.base_url ?? '').split(' || ')[0]!;
  const base = new URL(fillParams(template.replace(ORIGIN, 'https://fake.invalid'), c)).pathname.replace(
    /\/$/,
    '',
  );
  if (!c.api.path.startsWith(base)) throw new Error(`${c.provider}: ${c.api.path} is not under ${base}`);
  return c.api.path.slice(base.length);
}

/** The origins the real entry reaches with the row's connection config (the first of `a || b`). */
export function realOrigins(c: TwoStepCase): { token: string; api: string } {
  const entry = catalogEntry(c.provider);
  const origin = (template: string | undefined) => {
    const first = (template ?? '').split(' || ')[0]!;
    return new URL(fillParams(first, c)).origin;
  };
  return { token: origin(entry.token_url), api: origin(entry.proxy?.base_url) };
}

/**
 * Overrides keeping each real entry but sending its calls to the fake: every origin in its token URL and
 * proxy base URL becomes `<fake>/<provider>`; a fixed token lifetime is shortened so it ends in the test.
 */
export function twoStepProvidersYaml(url: string): string {
  return TWO_STEP_CASES.map((c) => {
    const entry = catalogEntry(c.provider);
    const local = (template: string) => template.replace(ORIGIN, `${url}/${c.provider}`);
    const patch = {
      alias: c.provider,
      token_url: local(entry.token_url ?? ''),
      proxy: { ...entry.proxy, base_url: local(entry.proxy?.base_url ?? '') },
      ...(c.expiry === 'fixed' ? { token_expires_in_ms: TWO_STEP_TTL_SECONDS * 1000 } : {}),
    };
    // JSON is YAML: the patch is written as it is.
    return `${c.provider}: ${JSON.stringify(patch)}\n`;
  })
    .concat(heymarketYaml(url))
    .join('');
}

function heymarketYaml(url: string): string {
  const entry = catalogEntry('heymarket');
  const patch = {
    alias: 'heymarket',
    token: { ...entry.token, expires_in_ms: TWO_STEP_TTL_SECONDS * 1000 },
    proxy: { ...entry.proxy, base_url: (entry.proxy?.base_url ?? '').replace(ORIGIN, `${url}/heymarket`) },
  };
  return `heymarket: ${JSON.stringify(patch)}\n`;
}
