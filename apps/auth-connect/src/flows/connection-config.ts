import type { ConnectIntegrationDefaults, FieldError } from '@switchboard/contracts';
import {
  connectionConfigValueProblems,
  providerFilledKeys,
  type FormField,
  type ResolvedProvider,
} from '@switchboard/providers';
import { AuthConnectError } from '../auth-connect.errors';

/** Keys of the session's connection_config that configure the OAuth client, not the connection. */
export const CLIENT_OVERRIDE_KEYS = [
  'oauth_client_id_override',
  'oauth_client_secret_override',
  'oauth_scopes_override',
] as const;

const FORMATS: Record<NonNullable<FormField['format']>, RegExp> = {
  hostname:
    /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*(?::\d{1,5})?$/,
  uri: /^https?:\/\/[^\s/?#@]+(?:[/?#][^\s]*)?$/,
  uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i,
  email: /^[^\s@]+@[^\s@]+\.[^\s@]+$/,
};

/** Characters that would let a value typed by an end user change the structure of a provider URL. */
const URL_STRUCTURE = /[\s/?#@\\%]/;

/** The fields of a provider's connect form that the end user fills in (automated and hidden ones are not theirs). */
export function userFields(provider: ResolvedProvider): [string, FormField][] {
  return Object.entries(provider.connection_config ?? {}).filter(
    ([, field]) => !field.automated && !field.hidden,
  );
}

/**
 * The connection config of a flow: what the page sent (`params[...]`), checked against the provider's
 * form, then the session's `integrations_config_defaults.<key>.connection_config`, which wins (the
 * customer's backend decides, not the browser). Client override keys are left out: they configure the
 * OAuth client, and a secret must never land in a connection's config.
 *
 * The browser is not trusted: it may only fill the fields the form asks of it. A key the provider does not
 * declare, or one Switchboard fills itself from the provider (`automated`, `hidden`: instance URLs, webhook
 * routing ids), is refused rather than merged, so an end user can neither point a token URL at their own
 * server nor claim another tenant's account id. Every value, the session's too, must pass its field's
 * pattern; host fields must name the provider's own domains.
 */
export function buildConnectionConfig(
  provider: ResolvedProvider,
  params: Record<string, string>,
  defaults: ConnectIntegrationDefaults | undefined,
): Record<string, unknown> {
  const fromSession = { ...(defaults?.connection_config ?? {}) } as Record<string, unknown>;
  for (const key of CLIENT_OVERRIDE_KEYS) delete fromSession[key];
  // What the provider returns (token metadata, post-connect answers, automated fields) is filled from the
  // provider alone, never preset: a webhook routing key set here would route another tenant's events.
  for (const key of providerReturnedKeys(provider)) delete fromSession[key];
  const merged: Record<string, unknown> = { ...params, ...fromSession };

  const errors: FieldError[] = [];
  const declared = provider.connection_config ?? {};
  const askable = new Set(userFields(provider).map(([name]) => name));
  const returned = providerReturnedKeys(provider);
  for (const name of Object.keys(params)) {
    if (askable.has(name) && !returned.has(name)) continue;
    errors.push({
      code: 'unrecognized_keys',
      message: `${name} is not a connection field of ${provider.display_name}`,
      path: ['params', name],
    });
  }
  for (const [name, field] of Object.entries(declared)) {
    const value = merged[name];
    if (value === undefined || value === '') {
      if (field.default_value !== undefined && !field.automated) merged[name] = field.default_value;
      else if (!field.optional && !field.automated && !field.hidden) {
        errors.push({ code: 'missing', message: `${field.title} is required`, path: ['params', name] });
      }
      continue;
    }
    if (typeof value !== 'string') continue;
    const problem = fieldProblem(field, value);
    if (problem)
      errors.push({ code: 'invalid_format', message: `${field.title} ${problem}`, path: ['params', name] });
  }
  if (errors.length === 0) {
    for (const [name, problem] of connectionConfigValueProblems(provider, merged)) {
      const title = declared[name]?.title ?? name;
      errors.push({ code: 'invalid_format', message: `${title} ${problem}`, path: ['params', name] });
    }
  }
  if (errors.length > 0)
    throw new AuthConnectError('invalid_connection', 'Invalid connection configuration', errors);
  return merged;
}

/** Keys the provider's own answers fill; a token-URL host field (proven by the exchange) is the user's to type. */
function providerReturnedKeys(provider: ResolvedProvider): Set<string> {
  return providerFilledKeys({ ...provider, token_url: undefined });
}

function fieldProblem(field: FormField, value: string): string | undefined {
  // An enum's values are the catalog's own (ModMed's `stage.ema-api.com/ema-dev` is a host and a path).
  if (field.enum) return field.enum.includes(value) ? undefined : `must be one of ${field.enum.join(', ')}`;
  if (field.pattern && !new RegExp(field.pattern).test(value)) return 'has an invalid format';
  if (field.format) return FORMATS[field.format].test(value) ? undefined : `must be a valid ${field.format}`;
  // Without a declared format the value may land inside a URL path or host: keep it a plain token.
  if (!field.pattern && URL_STRUCTURE.test(value)) return 'must not contain spaces or any of / ? # @ \\ %';
  return undefined;
}
