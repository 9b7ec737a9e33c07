import { fieldErrorsFromZod, SwitchboardError } from '@switchboard/contracts';
import { z } from 'zod';

function parseWith<S extends z.ZodType>(
  schema: S,
  input: unknown,
  code: 'invalid_body' | 'invalid_query_params' | 'invalid_uri_params' | 'invalid_headers',
  what: string,
): z.infer<S> {
  const result = schema.safeParse(input);
  if (!result.success) throw new SwitchboardError(code, `Invalid ${what}`, fieldErrorsFromZod(result.error));
  return result.data;
}

/** A missing body on a route that takes one is an invalid body, not a crash. */
export const parseBody = <S extends z.ZodType>(schema: S, body: unknown): z.infer<S> =>
  parseWith(schema, body ?? undefined, 'invalid_body', 'body');
export const parseQuery = <S extends z.ZodType>(schema: S, query: unknown): z.infer<S> =>
  parseWith(schema, query ?? {}, 'invalid_query_params', 'query parameters');
export const parseParams = <S extends z.ZodType>(schema: S, params: unknown): z.infer<S> =>
  parseWith(schema, params ?? {}, 'invalid_uri_params', 'path parameters');
export const parseHeaders = <S extends z.ZodType>(
  schema: S,
  headers: Record<string, string | string[] | undefined>,
): z.infer<S> => parseWith(schema, headers, 'invalid_headers', 'headers');

const noQuery = z.strictObject({});
/** A route that takes no query parameters refuses any, as Nango does (`invalid_query_params`). */
export const parseNoQuery = (query: unknown): void => {
  parseQuery(noQuery, query);
};
