import type { IntegrationCredentialsType } from '@switchboard/contracts';

/** One credentials field of an integration; `secret` ones are write-only and never shown back. */
export interface CredentialField {
  name:
    | 'client_id'
    | 'client_secret'
    | 'scopes'
    | 'webhook_secret'
    | 'webhook_public_key'
    | 'app_id'
    | 'app_link'
    | 'private_key';
  label: string;
  secret: boolean;
  required: boolean;
  multiline?: boolean;
  description?: string;
  /** What is wrong with a typed value, in the API's words; checked before anything is sent. */
  problem?(value: string): string | null;
}

const PUBLIC_KEY_ALGORITHMS = ['rsa-sha256', 'ed25519'];
/** The API's bound on a webhook public key. */
export const WEBHOOK_PUBLIC_KEY_MAX = 16384;

/**
 * The checks of `webhook_public_key` the API makes that need no key parsing, with its messages; whether the
 * key is of the provider's algorithm is left to the API, whose refusal the form shows.
 */
export function webhookPublicKeyProblem(value: string): string | null {
  const text = value.trim();
  if (value.length > WEBHOOK_PUBLIC_KEY_MAX)
    return `webhook_public_key is longer than ${WEBHOOK_PUBLIC_KEY_MAX} characters`;
  if (/PRIVATE KEY/.test(text))
    return 'webhook_public_key is a private key; give the public key (BEGIN PUBLIC KEY)';
  const pem = /^-----BEGIN PUBLIC KEY-----\s+([A-Za-z0-9+/=\s]+?)\s*-----END PUBLIC KEY-----$/.test(text);
  if (!pem && !/^[A-Za-z0-9+/]+={0,2}$/.test(text))
    return 'webhook_public_key is not a readable public key (PEM or base64 DER SubjectPublicKeyInfo)';
  return null;
}

const WEBHOOK_SECRET: CredentialField = {
  name: 'webhook_secret',
  label: 'Webhook secret',
  secret: true,
  required: false,
};
const WEBHOOK_PUBLIC_KEY: CredentialField = {
  name: 'webhook_public_key',
  label: 'Webhook public key (PEM)',
  secret: true,
  required: false,
  multiline: true,
  description: "The public key the provider signs its webhooks with, if not the catalog's",
  problem: webhookPublicKeyProblem,
};
const OAUTH: CredentialField[] = [
  { name: 'client_id', label: 'Client ID', secret: false, required: true },
  { name: 'client_secret', label: 'Client secret', secret: true, required: true },
  { name: 'scopes', label: 'Scopes', secret: false, required: false, description: 'Comma-separated' },
  WEBHOOK_SECRET,
];
const APP: CredentialField[] = [
  { name: 'app_id', label: 'App ID', secret: false, required: true },
  { name: 'app_link', label: 'App link', secret: false, required: true },
  { name: 'private_key', label: 'Private key (PEM)', secret: true, required: true, multiline: true },
];

/** What the console needs of a provider's catalog entry (`GET /providers/{name}`). */
export interface ProviderShape {
  auth_mode: string;
  webhook?: { signature?: { algorithm?: string } };
}

/**
 * The provider's `auth_mode` (from `GET /providers/{name}`) decides which credentials its integrations
 * hold, as the API's `credentials` union does; modes where each connection brings its own (API_KEY,
 * BASIC, ...) hold only the webhook secret or public key, and only when the provider signs its webhooks.
 * A provider signing with a public key (`rsa-sha256`, `ed25519`) also takes a webhook public key.
 */
export function credentialsFor(
  provider: ProviderShape,
): { type: IntegrationCredentialsType; fields: CredentialField[] } | null {
  const algorithm = provider.webhook?.signature?.algorithm;
  const publicKey = algorithm !== undefined && PUBLIC_KEY_ALGORITHMS.includes(algorithm);
  const withKey = (fields: CredentialField[]) => (publicKey ? [...fields, WEBHOOK_PUBLIC_KEY] : fields);
  const authMode = provider.auth_mode;
  switch (authMode) {
    case 'OAUTH1':
    case 'OAUTH2':
    case 'TBA':
      return { type: authMode, fields: withKey(OAUTH) };
    case 'APP':
      return {
        type: 'APP',
        fields: withKey([
          ...APP,
          { name: 'client_id', label: 'Client ID', secret: false, required: false },
          { name: 'client_secret', label: 'Client secret', secret: true, required: false },
        ]),
      };
    case 'CUSTOM':
      return { type: 'CUSTOM', fields: withKey([...OAUTH, ...APP]) };
    default:
      // Every other catalog mode is one whose connections bring their own credentials.
      if (!provider.webhook?.signature) return null;
      return { type: authMode as IntegrationCredentialsType, fields: withKey([WEBHOOK_SECRET]) };
  }
}
