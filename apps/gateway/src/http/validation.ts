import {
  createParamDecorator,
  Injectable,
  type ArgumentMetadata,
  type ExecutionContext,
  type PipeTransform,
} from '@nestjs/common';
import { fieldErrorsFromZod, SwitchboardError, type ErrorCode } from '@switchboard/contracts';
import type { FastifyRequest } from 'fastify';
import { createZodDto, createZodValidationPipe } from 'nestjs-zod';
import { z } from 'zod';

/**
 * Request inputs are typed by DTO classes made from the contracts' zod schemas (`createZodDto`), and
 * `ContractPipe` (the app's one pipe) parses each `@Body()`, `@Query()`, `@Param()` and `@RequestHeaders()`
 * typed with one before the handler runs. A failure is one of our errors, named by where the input was:
 *
 *   body → 400 `invalid_body`, query → 400 `invalid_query_params`, path → 400 `invalid_uri_params`,
 *   headers → 400 `invalid_headers`, each with `errors: [{ path, message, code }]` from zod's issues.
 *
 * Inputs typed otherwise (`@Param('file') file: string`, `@Caller()`, …) are left as they are. When
 * several inputs of one request are invalid, the one declared last is reported (Nest resolves a
 * handler's parameters last first). A check that must come before the inputs are parsed (the CLI's
 * version on a deploy, the console's admin-only routes) is a guard: guards run before pipes.
 */

/** A marker for the request's headers as a custom parameter (Nest runs no pipe on its own `@Headers()`). */
const HEADERS = 'headers';

/** All the request's headers, parsed by the pipe when typed with a DTO (names are lower-case). */
export const RequestHeaders = (): ParameterDecorator => headersParam(HEADERS);
const headersParam = createParamDecorator(
  (_data: unknown, context: ExecutionContext) => context.switchToHttp().getRequest<FastifyRequest>().headers,
);

interface Source {
  code: ErrorCode;
  what: string;
  /** What a missing input is parsed as. */
  absent: unknown;
}

const BODY: Source = { code: 'invalid_body', what: 'body', absent: undefined };
const QUERY: Source = { code: 'invalid_query_params', what: 'query parameters', absent: {} };
const PARAMS: Source = { code: 'invalid_uri_params', what: 'path parameters', absent: {} };
const HEADER_SOURCE: Source = { code: 'invalid_headers', what: 'headers', absent: {} };

function sourceOf({ type, data }: ArgumentMetadata): Source | undefined {
  switch (type) {
    case 'body':
      return BODY;
    case 'query':
      return QUERY;
    case 'param':
      return PARAMS;
    case 'custom':
      return data === HEADERS ? HEADER_SOURCE : undefined;
  }
}

function invalid(source: Source, error: unknown): SwitchboardError {
  return new SwitchboardError(source.code, `Invalid ${source.what}`, fieldErrorsFromZod(error as z.ZodError));
}

/** Carries zod's error from the library's pipe to ours, which knows where the input came from. */
class InvalidInput extends Error {
  constructor(readonly zodError: unknown) {
    super('invalid input');
  }
}

const ZodPipe = createZodValidationPipe({ createValidationException: (error) => new InvalidInput(error) });

@Injectable()
export class ContractPipe extends ZodPipe implements PipeTransform {
  override transform(value: unknown, metadata: ArgumentMetadata): unknown {
    const source = sourceOf(metadata);
    if (!source) return value;
    try {
      // A missing body (or a JSON `null`) on a route that takes one is an invalid body, not a crash.
      return super.transform(value ?? source.absent, metadata);
    } catch (error) {
      throw error instanceof InvalidInput ? invalid(source, error.zodError) : error;
    }
  }
}

/** A route that takes no query parameters refuses any, as Nango does (`invalid_query_params`). */
export class NoQuery extends createZodDto(z.strictObject({})) {}

/**
 * The same parsing for a route that must answer a failure itself (a popup's result page, a raw Fastify
 * route) instead of through the exception filter.
 */
function parseWith<S extends z.ZodType>(source: Source, schema: S, input: unknown): z.infer<S> {
  const result = schema.safeParse(input ?? source.absent);
  if (!result.success) throw invalid(source, result.error);
  return result.data;
}
export const parseQuery = <S extends z.ZodType>(schema: S, query: unknown): z.infer<S> =>
  parseWith(QUERY, schema, query);
export const parseParams = <S extends z.ZodType>(schema: S, params: unknown): z.infer<S> =>
  parseWith(PARAMS, schema, params);
