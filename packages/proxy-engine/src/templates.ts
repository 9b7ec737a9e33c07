import { ProxyError } from './proxy.errors';

/** Values a provider template may refer to: `${apiKey}`, `${accessToken}`, `${connectionConfig.x}`, `${credentials.x}`, ... */
export type TemplateVars = ReadonlyMap<string, string>;

const PLACEHOLDER = /\$\{([^{}]*)\}/g;

/** `base64(a:b)`: the base64 of the named values joined by ':' (Tripletex's Basic pair of company and token). */
function valueOf(name: string, vars: TemplateVars): string | undefined {
  const call = /^base64\((.+)\)$/.exec(name);
  if (!call) return vars.get(name);
  const parts = (call[1] ?? '').split(':').map((part) => vars.get(part.trim()));
  if (parts.some((part) => part === undefined || part === '')) return undefined;
  return Buffer.from(parts.join(':')).toString('base64');
}

/** Replaces every `${name}` (or `${base64(a:b)}`); undefined when one of them has no (non-empty) value. */
export function interpolate(template: string, vars: TemplateVars): string | undefined {
  let missing = false;
  const out = template.replace(PLACEHOLDER, (_m, name: string) => {
    const value = valueOf(name.trim(), vars);
    if (value === undefined || value === '') missing = true;
    return value ?? '';
  });
  return missing ? undefined : out;
}

const HOST_VALUE = /^[A-Za-z0-9.-]+(:\d{1,5})?$/;
const PATH_VALUE_FORBIDDEN = /[?#\\\s]/;

/**
 * Resolves a provider's `proxy.base_url` template. `A || B` takes the first alternative whose
 * placeholders all have values. Connection-config values come from end users, so they may not reshape
 * the URL: a value inside the host must look like a host name, a value in the path may not start a
 * query or fragment, and a template that is one placeholder at its start must receive an http(s) URL.
 */
export function resolveBaseUrl(template: string, vars: TemplateVars): string {
  const alternatives = template.split('||').map((s) => s.trim());
  let lastProblem = 'a value it needs is missing';
  for (const alternative of alternatives) {
    const problem = unsafeUrlValue(alternative, vars);
    if (problem === 'missing') continue;
    if (problem) {
      lastProblem = problem;
      continue;
    }
    const value = interpolate(alternative, vars);
    if (value !== undefined) return value;
  }
  throw new ProxyError(
    'invalid_connection',
    `The provider's base URL cannot be built for this connection: ${lastProblem}`,
  );
}

function unsafeUrlValue(alternative: string, vars: TemplateVars): string | 'missing' | undefined {
  const scheme = alternative.indexOf('://');
  const slash = scheme === -1 ? -1 : alternative.indexOf('/', scheme + 3);
  const authorityEnd = scheme === -1 ? -1 : slash === -1 ? alternative.length : slash;
  for (const match of alternative.matchAll(PLACEHOLDER)) {
    const name = (match[1] ?? '').trim();
    const value = vars.get(name);
    if (value === undefined || value === '') return 'missing';
    const at = match.index ?? 0;
    if (at === 0) {
      if (!/^https?:\/\/[^\s\\]+$/i.test(value)) return `${name} must be an http(s) URL`;
    } else if (at < authorityEnd) {
      if (!HOST_VALUE.test(value)) return `${name} must be a host name`;
    } else if (PATH_VALUE_FORBIDDEN.test(value)) {
      return `${name} may not contain ?, #, \\ or spaces`;
    }
  }
  return undefined;
}
