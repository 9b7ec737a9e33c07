/**
 * The provider's side of OAuth 1.0a (RFC 5849) for fake providers that check signatures themselves,
 * written from the RFC with node's own encoding rather than an OAuth library, so a signing mistake on our
 * side cannot be mirrored by the fake that verifies it.
 */

/** Percent-encoding as RFC 5849 §3.6 wants it: encodeURIComponent leaves `!'()*` as they are. */
export const oauth1Encode = (value: string): string =>
  encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/**
 * The parameters of an `Authorization: OAuth ...` header (RFC 5849 §3.5.1), decoded; undefined when the
 * header is absent, of another scheme, or has a part that is not `name="value"`.
 */
export function parseOAuthAuthorization(value: string | undefined): Record<string, string> | undefined {
  if (!value?.startsWith('OAuth ')) return undefined;
  const out: Record<string, string> = {};
  for (const part of value.slice('OAuth '.length).split(',')) {
    const match = /^\s*([^=\s]+)="([^"]*)"\s*$/.exec(part);
    if (!match) return undefined;
    out[decodeURIComponent(match[1]!)] = decodeURIComponent(match[2]!);
  }
  return out;
}

/**
 * The signature base string of RFC 5849 §3.4.1: the method, the base URI (lower-case host, no query) and
 * the normalized parameters, which are the URL's query, `form` (a form body's fields) and the header's
 * parameters other than `oauth_signature` and `realm`.
 */
export function oauth1SignatureBase(
  method: string,
  url: URL,
  header: Record<string, string>,
  form: Iterable<[string, string]> = [],
): string {
  const normalized = [
    ...url.searchParams,
    ...form,
    ...Object.entries(header).filter(([key]) => key !== 'oauth_signature' && key !== 'realm'),
  ]
    .map(([k, v]) => [oauth1Encode(k), oauth1Encode(v)] as const)
    .sort(([ak, av], [bk, bv]) => (ak === bk ? (av < bv ? -1 : av > bv ? 1 : 0) : ak < bk ? -1 : 1))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const baseUri = `${url.protocol}//${url.host.toLowerCase()}${url.pathname}`;
  return `${method.toUpperCase()}&${oauth1Encode(baseUri)}&${oauth1Encode(normalized)}`;
}

/** The key of the HMAC and PLAINTEXT methods (RFC 5849 §3.4.2): both secrets, encoded, joined by `&`. */
export const oauth1SigningKey = (consumerSecret: string, tokenSecret: string): string =>
  `${oauth1Encode(consumerSecret)}&${oauth1Encode(tokenSecret)}`;
