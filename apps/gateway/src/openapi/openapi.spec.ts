import './zod-openapi';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { RequestMethod } from '@nestjs/common';
import { FASTIFY_ROUTE_CONFIG_METADATA } from '@nestjs/platform-fastify/constants';
import { API_CONTROLLERS } from '../app.module';
import { PROXY_DOCUMENTED_METHODS, PROXY_SCOPE } from '../proxy/proxy.openapi';
import { PROXY_METHODS } from '@switchboard/proxy-engine';
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
      const config = Reflect.getMetadata(FASTIFY_ROUTE_CONFIG_METADATA, handler) as
        | { access?: { scope?: string } }
        | undefined;
      routes.push({ method: RequestMethod[method].toLowerCase(), path, scope: config?.access?.scope });
    }
  }
  return routes;
}

describe('OpenAPI document', () => {
  it('matches the checked-in openapi/openapi.json (run `npm run openapi` after changing a contract)', () => {
    const checkedIn = JSON.parse(
      readFileSync(join(__dirname, '../../openapi/openapi.json'), 'utf8'),
    ) as unknown;
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
      const operation = (doc.paths as Record<string, Record<string, { security?: unknown[] }>>)[route.path]?.[
        route.method
      ];
      expect(operation?.security).toEqual([{ secretKey: [route.scope] }]);
    }
  });

  it("documents /proxy for every method the proxy serves, with its scope, its Nango headers and the provider's answer as the default", () => {
    const doc = buildOpenApiDocument();
    const path = (
      doc.paths as Record<
        string,
        Record<
          string,
          {
            description?: string;
            security?: unknown[];
            parameters?: { in: string; name: string; required?: boolean }[];
            responses: Record<string, unknown>;
          }
        >
      >
    )['/proxy/{endpoint}'];
    // OpenAPI has no PROPFIND or REPORT; the operations' description names them.
    const expressible = PROXY_METHODS.map((m) => m.toLowerCase()).filter(
      (m) => !['propfind', 'report'].includes(m),
    );
    expect(Object.keys(path ?? {}).sort()).toEqual(expressible.sort());
    expect([...PROXY_DOCUMENTED_METHODS].sort()).toEqual(expressible.sort());
    for (const operation of Object.values(path ?? {})) {
      expect(operation.description).toContain('PROPFIND');
      expect(operation.security).toEqual([{ secretKey: [PROXY_SCOPE] }]);
      const required = (operation.parameters ?? [])
        .filter((p) => p.in === 'header' && p.required)
        .map((p) => p.name)
        .sort();
      expect(required).toEqual(['connection-id', 'provider-config-key']);
      expect(Object.keys(operation.responses)).toEqual(
        expect.arrayContaining(['default', '400', '401', '403', '404', '429', '502', '504']),
      );
    }
  });
});
