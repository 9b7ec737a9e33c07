import type { ScriptValue } from './isolate';

/** nango.paginate in Nango's three styles: a cursor in the body, a next link, or an offset. */

/** A dotted path's value in an object (`data.items`); the object itself for no path. */
export function pick(object: unknown, path: string | undefined): ScriptValue {
  if (!path) return object;
  let value: ScriptValue = object;
  for (const key of String(path).split('.')) {
    if (value === null || value === undefined) return undefined;
    value = value[key];
  }
  return value;
}

/** The URL of a Link header's entry with the relation (`<https://…?page=2>; rel="next"`). */
export function nextLink(header: unknown, rel: string): string | undefined {
  if (!header) return undefined;
  const relation = new RegExp('rel="?' + rel.replace(/[.*+?^$()|[\]\\{}]/g, '\\$&') + '"?', 'i');
  for (const entry of String(header).split(',')) {
    const match = /<([^>]*)>\s*;(.*)/.exec(entry.trim());
    if (match && relation.test(match[2]!)) return match[1];
  }
  return undefined;
}

/** A next link as a proxy endpoint: its path and query (the proxy adds the provider's base URL). */
export function toEndpoint(
  link: string,
  UrlClass: new (url: string) => { pathname: string; search: string },
): string {
  try {
    const url = new UrlClass(link);
    return url.pathname + url.search;
  } catch {
    return link;
  }
}

/** Nango's pagination settings: the provider's defaults overlaid with the call's own. */
export interface PaginationSettings {
  type?: string;
  limit?: number | string;
  limit_name_in_request?: string;
  response_path?: string;
  cursor_path_in_response?: string;
  cursor_name_in_request?: string;
  link_rel_in_response_header?: string;
  link_path_in_response_body?: string;
  offset_name_in_request?: string;
  offset_start_value?: number | string;
  offset_calculation_method?: string;
}

export interface ProxyResponse {
  data: ScriptValue;
  headers: Record<string, ScriptValue>;
}

export interface PaginateDeps {
  proxy: (config: ScriptValue) => Promise<ProxyResponse>;
  /** The provider's pagination settings (asked once per run), or null. */
  providerDefaults: () => Promise<PaginationSettings | null>;
  URL: () => new (url: string) => { pathname: string; search: string };
}

export function createPaginate(deps: PaginateDeps): (config: ScriptValue) => AsyncGenerator<unknown[]> {
  let providerSettings: PaginationSettings | null | undefined;
  return async function* paginate(config) {
    if (providerSettings === undefined) providerSettings = (await deps.providerDefaults()) || null;
    const settings: PaginationSettings = Object.assign({}, providerSettings || {}, config.paginate || {});
    if (!['cursor', 'link', 'offset'].includes(settings.type ?? '')) {
      throw new Error(
        'paginate: no pagination type for this provider; pass paginate.type (cursor, link or offset)',
      );
    }
    const request = Object.assign({}, config, { method: String(config.method || 'GET').toUpperCase() });
    const inBody = ['POST', 'PUT', 'PATCH'].includes(request.method);
    const place = (): Record<string, unknown> => {
      if (inBody) return (request.data = Object.assign({}, request.data || {}));
      return (request.params = Object.assign({}, typeof request.params === 'object' ? request.params : {}));
    };
    const limit = settings.limit;
    if (limit !== undefined && settings.limit_name_in_request)
      place()[settings.limit_name_in_request] = limit;
    const pageOf = (response: ProxyResponse): unknown[] => {
      const page: unknown = pick(response.data, settings.response_path);
      if (!Array.isArray(page)) {
        throw new Error('paginate: the response has no array at "' + (settings.response_path || '') + '"');
      }
      return page;
    };
    if (settings.type === 'cursor') {
      for (;;) {
        const response = await deps.proxy(request);
        const page = pageOf(response);
        if (page.length === 0) return;
        yield page;
        const cursor: unknown = pick(response.data, settings.cursor_path_in_response);
        if (cursor === undefined || cursor === null || String(cursor).trim() === '') return;
        place()[String(settings.cursor_name_in_request)] = cursor;
      }
    } else if (settings.type === 'link') {
      for (;;) {
        const response = await deps.proxy(request);
        const page = pageOf(response);
        if (page.length === 0) return;
        yield page;
        const link: unknown = settings.link_rel_in_response_header
          ? nextLink(response.headers.link, settings.link_rel_in_response_header)
          : pick(response.data, settings.link_path_in_response_body);
        if (!link) return;
        request.endpoint = toEndpoint(String(link), deps.URL());
        delete request.params;
      }
    } else {
      let offset = Number(settings.offset_start_value || 0);
      for (;;) {
        place()[String(settings.offset_name_in_request)] = String(offset);
        const response = await deps.proxy(request);
        const page = pageOf(response);
        if (page.length === 0) return;
        yield page;
        if (limit !== undefined && page.length < Number(limit)) return;
        offset += settings.offset_calculation_method === 'per-page' ? 1 : page.length;
      }
    }
  };
}
