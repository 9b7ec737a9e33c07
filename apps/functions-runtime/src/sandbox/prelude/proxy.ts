import { Buffer, peekPart } from './context';
import { call } from './host-calls';
import type { ScriptValue } from './isolate';
import type { ProxyResponse } from './pagination';

/** nango.proxy and its verbs: the call goes to the host's proxy client; a non-2xx answer is thrown. */

/** The request body as the host takes it: text, bytes (base64), a form, or JSON. */
export const toBody = (data: unknown): { kind: string; value: unknown } | undefined => {
  if (data === undefined || data === null) return undefined;
  if (typeof data === 'string') return { kind: 'text', value: data };
  // A Buffer is a Uint8Array: ArrayBuffer.isView covers it without loading Buffer.
  if (ArrayBuffer.isView(data) || data instanceof ArrayBuffer) {
    const view = data instanceof ArrayBuffer ? new Uint8Array(data) : data;
    return {
      kind: 'base64',
      value: Buffer().from(view.buffer, view.byteOffset, view.byteLength).toString('base64'),
    };
  }
  const SearchParams = peekPart('URLSearchParams');
  if (SearchParams && data instanceof SearchParams) return { kind: 'form', value: String(data) };
  return { kind: 'json', value: data };
};

export const proxy = async (config: ScriptValue): Promise<ProxyResponse & ScriptValue> => {
  if (!config || typeof config !== 'object') throw new TypeError('proxy needs a config object');
  const reply = await call('proxy', {
    method: String(config.method || 'GET').toUpperCase(),
    endpoint: config.endpoint,
    params: config.params,
    headers: config.headers,
    body: toBody(config.data),
    retries: config.retries,
    retryOn: config.retryOn,
    baseUrlOverride: config.baseUrlOverride,
    decompress: config.decompress,
    responseType: config.responseType,
    connectionId: config.connectionId,
    providerConfigKey: config.providerConfigKey,
  });
  const response = {
    status: reply.status,
    statusText: reply.statusText,
    headers: reply.headers,
    data: reply.base64 === undefined ? reply.data : Buffer().from(reply.base64, 'base64'),
    config,
  };
  if (response.status >= 200 && response.status < 300) return response;
  // As axios (and so Nango's scripts) do: a non-2xx answer is thrown, carrying the response.
  const error = new Error('Request failed with status code ' + response.status) as Error &
    Record<string, unknown>;
  error.name = 'AxiosError';
  error.code = response.status >= 500 ? 'ERR_BAD_RESPONSE' : 'ERR_BAD_REQUEST';
  error.status = response.status;
  error.response = response;
  throw error;
};
