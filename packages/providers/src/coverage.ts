import type { ProviderCatalog } from './catalog';
import type { AuthMode } from './schema';

export const MIN_PROVIDER_COUNT = 100;

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

/** What a catalog lacks to be shipped: too few providers, or a core provider missing. */
export function coverageProblems(catalog: ProviderCatalog): string[] {
  const problems: string[] = [];
  if (catalog.size < MIN_PROVIDER_COUNT) {
    problems.push(`the catalog has ${catalog.size} providers; at least ${MIN_PROVIDER_COUNT} are required`);
  }
  for (const name of Object.keys(CORE_PROVIDERS)) {
    if (catalog.get(name) === undefined) problems.push(`core provider "${name}" is missing`);
  }
  return problems;
}
