import type { IntegrationCredentialsType } from '@switchboard/contracts';

/** One credentials field of an integration; `secret` ones are write-only and never shown back. */
export interface CredentialField {
  name: 'client_id' | 'client_secret' | 'scopes' | 'webhook_secret' | 'app_id' | 'app_link' | 'private_key';
  label: string;
  secret: boolean;
  required: boolean;
  multiline?: boolean;
  description?: string;
}

const OAUTH: CredentialField[] = [
  { name: 'client_id', label: 'Client ID', secret: false, required: true },
  { name: 'client_secret', label: 'Client secret', secret: true, required: true },
  { name: 'scopes', label: 'Scopes', secret: false, required: false, description: 'Comma-separated' },
  { name: 'webhook_secret', label: 'Webhook secret', secret: true, required: false },
];
const APP: CredentialField[] = [
  { name: 'app_id', label: 'App ID', secret: false, required: true },
  { name: 'app_link', label: 'App link', secret: false, required: true },
  { name: 'private_key', label: 'Private key (PEM)', secret: true, required: true, multiline: true },
];

/**
 * The provider's `auth_mode` (from `GET /providers/{name}`) decides which credentials its integrations
 * hold, as the API's `credentials` union does; modes where each connection brings its own (API_KEY,
 * BASIC, ...) have none.
 */
export function credentialsFor(
  authMode: string,
): { type: IntegrationCredentialsType; fields: CredentialField[] } | null {
  switch (authMode) {
    case 'OAUTH1':
    case 'OAUTH2':
    case 'TBA':
      return { type: authMode, fields: OAUTH };
    case 'APP':
      return {
        type: 'APP',
        fields: [
          ...APP,
          { name: 'client_id', label: 'Client ID', secret: false, required: false },
          { name: 'client_secret', label: 'Client secret', secret: true, required: false },
        ],
      };
    case 'CUSTOM':
      return { type: 'CUSTOM', fields: [...OAUTH, ...APP] };
    default:
      return null;
  }
}
