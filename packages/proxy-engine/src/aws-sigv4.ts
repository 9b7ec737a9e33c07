import type { Readable } from 'node:stream';
import aws4 from 'aws4';
import { ProxyError } from './proxy.errors';
import { interpolate, type TemplateVars } from './templates';

/** The catalog's `proxy.aws_sigv4`: the service and region every request is signed for. */
export interface AwsSigV4Settings {
  service: string;
  region: string;
}

/**
 * Signs one request (after the caller's headers are in place): returns the headers AWS Signature V4 adds,
 * `authorization` and `x-amz-date`. The signature covers the method, the path with its query, the host,
 * the content type and the body; a streamed body is sent as `UNSIGNED-PAYLOAD`.
 */
export type RequestSigner = (
  method: string,
  origin: string,
  path: string,
  headers: Readonly<Record<string, string>>,
  body: Buffer | Readable | undefined,
) => Record<string, string>;

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** The connection's BASIC pair is the key: `username` = access key id, `password` = secret access key. */
export function awsSigV4Signer(
  settings: AwsSigV4Settings,
  credentials: Record<string, unknown>,
  vars: TemplateVars,
): RequestSigner {
  const accessKeyId = str(credentials.username);
  const secretAccessKey = str(credentials.password);
  if (!accessKeyId || !secretAccessKey)
    throw new ProxyError(
      'invalid_connection',
      'AWS signing needs the access key id and the secret access key',
    );
  const region = interpolate(settings.region, vars);
  if (!region || !/^[a-z0-9-]+$/.test(region))
    throw new ProxyError('invalid_connection', 'AWS signing needs a region such as us-east-1');
  const sessionToken = str(credentials.session_token);
  return (method, origin, path, headers, body) => {
    const signed: Record<string, string> = {};
    const contentType = headers['content-type'];
    if (contentType) signed['content-type'] = contentType;
    const streamed = body !== undefined && !Buffer.isBuffer(body);
    if (streamed) signed['x-amz-content-sha256'] = 'UNSIGNED-PAYLOAD';
    const request = aws4.sign(
      {
        method,
        host: new URL(origin).host,
        path,
        service: settings.service,
        region,
        headers: signed,
        ...(Buffer.isBuffer(body) ? { body } : {}),
      },
      { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) },
    );
    const out: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.headers ?? {})) {
      const lower = name.toLowerCase();
      if (lower === 'host' || lower === 'content-type') continue;
      out[lower] = String(value);
    }
    return out;
  };
}
