import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import {
  DEFAULT_JSON_MAX_DEPTH,
  jsonDepthExceeds,
  jsonTooDeepMessage,
  SwitchboardError,
  type FieldError,
} from '@switchboard/contracts';
import type { FastifyInstance } from 'fastify';

/** First place in a parsed JSON value holding a NUL character (Postgres text cannot store one). */
export function findNul(value: unknown, path: (string | number)[] = []): (string | number)[] | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? path : undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findNul(value[i], [...path, i]);
      if (found) return found;
    }
    return undefined;
  }
  if (value && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) {
      if (key.includes('\u0000')) return [...path, key];
      const found = findNul(child, [...path, key]);
      if (found) return found;
    }
  }
  return undefined;
}

const nulError = (
  code: 'invalid_body' | 'invalid_query_params' | 'invalid_uri_params',
  path: (string | number)[],
) => {
  const errors: FieldError[] = [{ code: 'invalid_string', message: 'NUL characters are not allowed', path }];
  return new SwitchboardError(code, 'NUL characters are not allowed', errors);
};

/**
 * How deeply the body of a large-body route (a deploy) may nest: it carries the models' JSON schemas, two
 * levels per nested object, so more than an API body; still within what a NATS message may carry around it.
 */
export const DEPLOY_JSON_MAX_DEPTH = 100;

/**
 * JSON-only parsing that tolerates what the official client sends (an empty body with
 * `Content-Type: application/json` on GET and DELETE) and refuses NUL characters anywhere in the
 * request before a handler can store them. A body nesting deeper than `maxDepth` is refused from its raw
 * text before it is parsed: every later walk of it (the NUL check, validation, `JSON.stringify` on its way
 * over NATS) recurses and would overflow the stack.
 */
export function configureHttp(
  app: NestFastifyApplication,
  bodyLimit: number,
  largeBodyRoutes: Record<string, number> = {},
  maxDepth = DEFAULT_JSON_MAX_DEPTH,
): void {
  const fastify = app.getHttpAdapter().getInstance() as FastifyInstance;
  // A route's own limit wins over the parser's: deploys carry compiled bundles, several MB of them.
  fastify.addHook('onRoute', (route) => {
    const limit = largeBodyRoutes[route.url];
    if (limit !== undefined) route.bodyLimit = limit;
  });
  // Fastify would hand a text/plain body to handlers as a string; every management route takes JSON,
  // so any other media type is a 415, as Nango answers.
  fastify.removeContentTypeParser('text/plain');
  fastify.addContentTypeParser(['application/json'], { parseAs: 'string', bodyLimit }, (req, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') return done(null, undefined);
    const depth =
      largeBodyRoutes[req.routeOptions.url ?? ''] === undefined
        ? maxDepth
        : Math.max(maxDepth, DEPLOY_JSON_MAX_DEPTH);
    if (jsonDepthExceeds(text, depth)) {
      return done(new SwitchboardError('invalid_body', jsonTooDeepMessage('The body', depth)), undefined);
    }
    try {
      done(null, JSON.parse(text));
    } catch {
      done(new SwitchboardError('invalid_json', 'The body is not valid JSON'), undefined);
    }
  });

  fastify.addHook('preValidation', async (request) => {
    const rawPath = request.url.split('?')[0] ?? '';
    if (/%00|\u0000/.test(rawPath)) throw nulError('invalid_uri_params', []);
    const queryNul = findNul(request.query);
    if (queryNul) throw nulError('invalid_query_params', queryNul);
    const bodyNul = findNul(request.body);
    if (bodyNul) throw nulError('invalid_body', bodyNul);
  });
}
