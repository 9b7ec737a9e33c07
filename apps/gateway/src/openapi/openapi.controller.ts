import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Controller, Get, Header, Inject, Param, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { SwitchboardError } from '@switchboard/contracts';
import { Public } from '../access/route-access';
import { GATEWAY_ENV, type GatewayEnv } from '../config/env';
import { buildOpenApiDocument } from './document';

/**
 * swagger-ui's built assets. Found by the package's manifest rather than by its main module, which loads
 * the 2 MB bundle as JavaScript into the gateway at every start only to say where the files are.
 */
const ASSETS_DIR = dirname(require.resolve('swagger-ui-dist/package.json'));

const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
};

/** The OpenAPI document and a docs page served from local assets (works on machines with no internet). */
@Controller()
export class OpenApiController {
  private document: string | undefined;

  constructor(@Inject(GATEWAY_ENV) private readonly env: GatewayEnv) {}

  @Get('openapi.json')
  @Public()
  @Header('Content-Type', 'application/json; charset=utf-8')
  openapi(): string {
    // Built on first use, not at start-up: most gateways are never asked for it.
    this.document ??= JSON.stringify(buildOpenApiDocument(this.env.SWITCHBOARD_SERVER_URL));
    return this.document;
  }

  @Get('docs')
  @Public()
  @Header('Content-Type', 'text/html; charset=utf-8')
  docs(): string {
    return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Switchboard API</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"></head><body><div id="ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#ui' });</script></body></html>`;
  }

  @Get('docs/assets/:file')
  @Public()
  async asset(@Param('file') file: string, @Res() reply: FastifyReply): Promise<void> {
    const type = ASSETS[file];
    if (!type) throw new SwitchboardError('not_found', 'No such asset');
    await reply
      .type(type)
      .header('Cache-Control', 'public, max-age=86400')
      .send(readFileSync(join(ASSETS_DIR, file)));
  }
}
