import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';
import type { ProviderCatalog } from './catalog';
import { PROVIDER_KEY_PATTERN, type AuthMode } from './schema';

export const MIN_PROVIDER_COUNT = 500;

/** The data file listing provider keys users' scripts name; each must be in the catalog. */
export const REQUIRED_PROVIDERS_PATH = path.resolve(__dirname, '..', 'catalog', 'required-providers.yaml');

const RequiredProvidersFileSchema = z.strictObject({
  required: z.array(z.string().regex(PROVIDER_KEY_PATTERN)).min(1),
});

/** Keys from `catalog/required-providers.yaml`, in file order. Throws when the file is unreadable or malformed. */
export function requiredProviderKeys(file: string = REQUIRED_PROVIDERS_PATH): string[] {
  const parsed = RequiredProvidersFileSchema.safeParse(parse(readFileSync(file, 'utf8')));
  if (!parsed.success)
    throw new Error(`${file}: expected "required: [provider keys]": ${parsed.error.message}`);
  return parsed.data.required;
}

/**
 * The providers most Switchboard users connect first, with the auth mode the built-in catalog gives them.
 * The build fails if one goes missing; an operator may still override any of them.
 */
export const CORE_PROVIDERS = {
  github: 'OAUTH2',
  'github-app': 'APP',
  gitlab: 'OAUTH2',
  bitbucket: 'OAUTH2',
  slack: 'OAUTH2',
  discord: 'OAUTH2',
  google: 'OAUTH2',
  'google-calendar': 'OAUTH2',
  'google-drive': 'OAUTH2',
  'google-mail': 'OAUTH2',
  'google-sheet': 'OAUTH2',
  microsoft: 'OAUTH2',
  outlook: 'OAUTH2',
  'microsoft-teams': 'OAUTH2',
  'one-drive': 'OAUTH2',
  'sharepoint-online': 'OAUTH2',
  hubspot: 'OAUTH2',
  salesforce: 'OAUTH2',
  pipedrive: 'OAUTH2',
  notion: 'OAUTH2',
  linear: 'OAUTH2',
  jira: 'OAUTH2',
  confluence: 'OAUTH2',
  asana: 'OAUTH2',
  monday: 'OAUTH2',
  clickup: 'OAUTH2',
  trello: 'OAUTH1',
  airtable: 'OAUTH2',
  zendesk: 'OAUTH2',
  intercom: 'OAUTH2',
  shopify: 'OAUTH2',
  stripe: 'OAUTH2',
  quickbooks: 'OAUTH2',
  xero: 'OAUTH2',
  zoom: 'OAUTH2',
  dropbox: 'OAUTH2',
  box: 'OAUTH2',
  docusign: 'OAUTH2',
  calendly: 'OAUTH2',
  mailchimp: 'OAUTH2',
  figma: 'OAUTH2',
  'twitter-v2': 'OAUTH2',
  greenhouse: 'BASIC',
  lever: 'OAUTH2',
  bamboohr: 'OAUTH2',
  freshdesk: 'BASIC',
  openai: 'API_KEY',
  anthropic: 'API_KEY',
  sentry: 'API_KEY',
  'netsuite-tba': 'TBA',
} as const satisfies Record<string, AuthMode>;

/**
 * What a catalog lacks to be shipped: too few providers, a core provider missing, or a key of
 * `catalog/required-providers.yaml` missing.
 */
export function coverageProblems(
  catalog: ProviderCatalog,
  requiredKeys: readonly string[] = requiredProviderKeys(),
): string[] {
  const problems: string[] = [];
  if (catalog.size < MIN_PROVIDER_COUNT) {
    problems.push(`the catalog has ${catalog.size} providers; at least ${MIN_PROVIDER_COUNT} are required`);
  }
  for (const name of Object.keys(CORE_PROVIDERS)) {
    if (catalog.get(name) === undefined) problems.push(`core provider "${name}" is missing`);
  }
  for (const name of requiredKeys) {
    if (catalog.get(name) === undefined)
      problems.push(`required provider "${name}" (catalog/required-providers.yaml) is missing`);
  }
  return problems;
}
