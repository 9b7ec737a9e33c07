import { createHmac } from 'node:crypto';
import { loadCatalog, type WebhookDefinition } from '@switchboard/providers';
import { parseBody, type WebhookRequest } from './provider-webhook';

/** What the provider-webhook spec files share: the catalog's webhook sections, requests and HMACs. */

const catalog = loadCatalog();

/** The catalog's webhook section of `provider` (throws if it has none). */
export const webhookOf = (provider: string): WebhookDefinition => {
  const definition = catalog.get(provider)?.webhook;
  if (!definition) throw new Error(`${provider} has no webhook section`);
  return definition;
};

/** A POST of `body` to `url` with `headers`, its body parsed as the ingress does. */
export function request(
  body: string | Buffer,
  headers: Record<string, string> = {},
  url = 'https://sb.example/webhook/e/k',
): WebhookRequest {
  const rawBody = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  return {
    rawBody,
    headers,
    query: new URL(url).searchParams,
    method: 'POST',
    url,
    parsed: parseBody(rawBody, headers['content-type']),
  };
}

export const hmac = (
  algorithm: 'sha256' | 'sha1',
  secret: string,
  message: string | Buffer,
  encoding: 'hex' | 'base64' = 'hex',
) => createHmac(algorithm, secret).update(message).digest(encoding);
