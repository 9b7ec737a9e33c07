import type { ServerResponse } from 'node:http';
import { PROXY_INTERNAL_HEADERS, type SwitchboardError } from '@switchboard/contracts';
import { fallbackStatus, ProxyError } from './proxy.errors';

/**
 * Writes one of our errors in the public shape straight to the socket, marked with its code in
 * `x-switchboard-error-code` so a gateway in front can re-emit it with the status of its own table.
 * For callers without a framework reply of their own (the proxy service).
 */
export function writeProxyError(res: ServerResponse, error: SwitchboardError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const code = error.code;
  const body = JSON.stringify({
    error: { code, message: error.message, ...(error.errors?.length ? { errors: error.errors } : {}) },
  });
  res.writeHead(fallbackStatus(code), {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    [PROXY_INTERNAL_HEADERS.errorCode]: code,
    ...(error instanceof ProxyError ? error.headers : {}),
  });
  res.end(body);
}
