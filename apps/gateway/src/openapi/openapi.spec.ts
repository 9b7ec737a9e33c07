import './zod-openapi';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { RequestMethod } from '@nestjs/common';
import { FASTIFY_ROUTE_CONFIG_METADATA } from '@nestjs/platform-fastify/constants';
import { API_CONTROLLERS } from '../app.module';
import { buildOpenApiDocument, DOCUMENTED_ROUTES } from './document';

type Route = { method: string; path: string; scope?: string };

/** Every route the API controllers declare, read from Nest's decorator metadata. */
function declaredRoutes(): Route[] {
  const routes: Route[] = [];
  for (const controller of API_CONTROLLERS) {
    const base = String(Reflect.getMetadata(PATH_METADATA, controller) ?? '');
    for (const name of Object.getOwnPropertyNames(controller.prototype)) {
      const handler = (controller.prototype as unknown as Record<string, unknown>)[name];
      if (typeof handler !== 'function' || name === 'constructor') continue;
      const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
      if (method === undefined) continue;
      const sub = String(Reflect.getMetadata(PATH_METADATA, handler) ?? '');
      const path = `/${[base, sub].filter((p) => p && p !== '/').join('/')}`.replace(/:(\w+)/g, '{$1}');
      const config = Reflect.getMetadata(FASTIFY_ROUTE_CONFIG_METADATA, handler) as { access?: { scope?: string } } | undefined;
      routes.push({ method: RequestMethod[method].toLowerCase(), path, scope: config?.access?.scope });
    }
  }
  return routes;
}

describe('OpenAPI document', () => {
  it('matches the checked-in openapi/openapi.json (run `npm run openapi` after changing a contract)', () => {
    const checkedIn = JSON.parse(readFileSync(join(__dirname, '../../openapi/openapi.json'), 'utf8')) as unknown;
    expect(JSON.parse(JSON.stringify(buildOpenApiDocument()))).toEqual(checkedIn);
  });

  it('documents every route the controllers serve, with the scope they enforce', () => {
    const declared = declaredRoutes();
    expect(declared.length).toBeGreaterThanOrEqual(DOCUMENTED_ROUTES.length);
    const documented = DOCUMENTED_ROUTES.map((r) => ({ method: r.method, path: r.path, scope: r.scope }));
    expect(declared.sort((a, b) => `${a.path}${a.method}`.localeCompare(`${b.path}${b.method}`))).toEqual(
      documented.sort((a, b) => `${a.path}${a.method}`.localeCompare(`${b.path}${b.method}`)),
    );
  });

  it('is OpenAPI 3.1 with a security requirement on every key-authenticated operation', () => {
    const doc = buildOpenApiDocument();
    expect(doc.openapi).toBe('3.1.0');
    for (const route of DOCUMENTED_ROUTES) {
      const operation = (doc.paths as Record<string, Record<string, { security?: unknown[] }>>)[route.path]?.[route.method];
      expect(operation?.security).toEqual([{ secretKey: [route.scope] }]);
    }
  });
});
