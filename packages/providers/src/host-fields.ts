/**
 * Connection-config fields that decide where Switchboard sends a request (a host, an origin). Their
 * values come from the end user (the connect page), the customer (session defaults, connection import) or
 * the provider (token response metadata). Whatever the source, a value may only name the provider's own
 * domains: the token URL receives the integration's client ID and secret, and later refresh tokens, so an
 * unpinned host field would hand them to whoever typed it.
 */

const PLACEHOLDER = /\$\{([^{}]*)\}/g;

/** Auth modes where no secret of the integration ever reaches a URL built from connection config. */
const OWN_CREDENTIALS_MODES: ReadonlySet<string> = new Set([
  'API_KEY',
  'BASIC',
  'NONE',
  // These send only what the end user typed (a key, a login), never anything of the integration.
  'JWT',
  'TWO_STEP',
  'SIGNATURE',
  'BILL',
]);

/**
 * Values a pinned host field must refuse: foreign hosts, full URLs, loopback, and hosts that only end
 * with or contain a provider domain. A pattern accepting any of them does not pin the host.
 */
export const FOREIGN_HOST_PROBES: readonly string[] = [
  'evil.example',
  'evil.example:443',
  'https://evil.example',
  'http://evil.example',
  '127.0.0.1',
  'evil.example/.x',
  'evil.example?.x',
  'evil.example#.x',
  'evil.example\\.x',
  'x@evil.example',
];

/** The origin part (scheme, host, port) of each `||` alternative of a URL template. */
export function originTemplates(template: string): string[] {
  return template.split('||').map((alternative) => {
    const trimmed = alternative.trim();
    const scheme = /^[a-z]+:\/\//i.exec(trimmed)?.[0] ?? '';
    let end = scheme.length;
    while (end < trimmed.length) {
      if (trimmed.startsWith('${', end)) {
        const close = trimmed.indexOf('}', end);
        end = close === -1 ? trimmed.length : close + 1;
        continue;
      }
      if ('/?#'.includes(trimmed[end] ?? '')) break;
      end += 1;
    }
    return trimmed.slice(0, end);
  });
}

/** The `${connectionConfig.x}` names a template puts in the origin of the URL it builds. */
export function originPlaceholders(template: string): string[] {
  const names = new Set<string>();
  for (const origin of originTemplates(template)) {
    for (const match of origin.matchAll(PLACEHOLDER)) {
      const name = match[1] ?? '';
      if (name.startsWith('connectionConfig.')) names.add(name.slice('connectionConfig.'.length));
    }
  }
  return [...names];
}

export interface HostFieldShape {
  pattern?: string | undefined;
  enum?: readonly string[] | undefined;
  format?: string | undefined;
}

export interface HostFieldsProviderShape {
  auth_mode: string;
  authorization_url?: string | undefined;
  token_url?: string | undefined;
  refresh_url?: string | undefined;
  request_url?: string | undefined;
  proxy?: { base_url?: string | undefined; verification?: { base_url_override?: string | undefined } };
  connection_config?: Record<string, HostFieldShape> | undefined;
}

/** Every URL template of an entry that Switchboard fills with connection config and then calls. */
export function urlTemplatesOf(provider: HostFieldsProviderShape): string[] {
  return [
    provider.authorization_url,
    provider.token_url,
    provider.refresh_url,
    provider.request_url,
    provider.proxy?.base_url,
    provider.proxy?.verification?.base_url_override,
  ].filter((value): value is string => typeof value === 'string');
}

/** Names of the connection-config values that end up in a URL's origin, or are declared as a host or URI. */
export function hostFieldNames(provider: HostFieldsProviderShape): string[] {
  const names = new Set<string>();
  for (const template of urlTemplatesOf(provider))
    for (const name of originPlaceholders(template)) names.add(name);
  for (const [name, field] of Object.entries(provider.connection_config ?? {})) {
    if (field.format === 'hostname' || field.format === 'uri') names.add(name);
  }
  return [...names];
}

/**
 * Whether a host field must be pinned to the provider's domains. Only where the end user brings their own
 * credentials (an API key, a password) and nothing of the integration is sent may a host be their own
 * server (a self-hosted GitLab, a WooCommerce store); even then the field needs a pattern.
 */
export function mustPinHosts(provider: Pick<HostFieldsProviderShape, 'auth_mode'>): boolean {
  return !OWN_CREDENTIALS_MODES.has(provider.auth_mode);
}

/** Whether a field's own rules (enum or pattern) accept a value. A field without either accepts nothing. */
export function hostValueAllowed(field: HostFieldShape | undefined, value: string): boolean {
  if (!field) return false;
  if (field.enum) return field.enum.includes(value);
  if (field.pattern) return new RegExp(field.pattern).test(value);
  return false;
}

/**
 * The catalog-time check: every host field is declared in `connection_config` with a `pattern` (or an
 * `enum`), and where the host must be pinned the pattern refuses every foreign-host probe. Returns
 * `[fieldName, problem]` pairs.
 */
export function hostFieldProblems(provider: HostFieldsProviderShape): [string, string][] {
  const problems: [string, string][] = [];
  const fields = provider.connection_config ?? {};
  for (const name of hostFieldNames(provider)) {
    const field = fields[name];
    if (!field) {
      problems.push([
        name,
        `is used in a URL's host but is not declared in connection_config; declare it (automated: true when the provider fills it) with a pattern pinned to the provider's domains`,
      ]);
      continue;
    }
    if (!field.pattern && !field.enum) {
      problems.push([
        name,
        `is a host field and needs a pattern pinned to the provider's domains (or an enum)`,
      ]);
      continue;
    }
    if (!mustPinHosts(provider) || field.enum) continue;
    const accepted = FOREIGN_HOST_PROBES.filter((probe) => hostValueAllowed(field, probe));
    if (accepted.length > 0) {
      problems.push([
        name,
        `pattern ${field.pattern} does not pin the host to the provider's domains: it accepts ${accepted.map((a) => JSON.stringify(a)).join(', ')}`,
      ]);
    }
  }
  return problems;
}

/**
 * The runtime check for values (whoever supplied them): each declared field with a pattern or enum must
 * accept its value, and host fields must have a value their rules accept. Returns `[fieldName, problem]`.
 */
export function connectionConfigValueProblems(
  provider: HostFieldsProviderShape,
  connectionConfig: Record<string, unknown>,
): [string, string][] {
  const problems: [string, string][] = [];
  const fields = provider.connection_config ?? {};
  const hostFields = new Set(hostFieldNames(provider));
  for (const [name, value] of Object.entries(connectionConfig)) {
    if (value === undefined || value === null || value === '') continue;
    const field = fields[name];
    const isHost = hostFields.has(name);
    if (!field) {
      if (isHost) problems.push([name, 'is not a declared field and cannot name a host']);
      continue;
    }
    if (typeof value !== 'string') {
      if (isHost || field.pattern || field.enum) problems.push([name, 'must be a string']);
      continue;
    }
    if (field.enum && !field.enum.includes(value))
      problems.push([name, `must be one of ${field.enum.join(', ')}`]);
    else if (field.pattern && !new RegExp(field.pattern).test(value))
      problems.push([name, 'has an invalid format']);
    else if (isHost && !hostValueAllowed(field, value)) problems.push([name, 'is not an allowed host']);
  }
  return problems;
}
