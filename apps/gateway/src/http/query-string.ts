import { parse } from 'qs';

/**
 * The gateway's query-string parser: `tags[end_user_id]=x` style parameters, as the official client
 * sends them, with bounds on arrays, nesting and parameters. qs before 6.14.1 ignored `arrayLimit` for
 * `a[]=` (GHSA-6rw7-vpxm-498p), so one query could build an array as long as the parameter limit.
 */
export function parseQueryString(query: string): Record<string, unknown> {
  return parse(query, { arrayLimit: 100, depth: 2, parameterLimit: 200 });
}
