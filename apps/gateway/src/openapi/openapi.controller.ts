import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Controller, Get, Header, Inject, Param, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { SwitchboardError } from '@switchboard/contracts';
import { getAbsoluteFSPath } from 'swagger-ui-dist';
import { Public } from '../access/route-access';
import { GATEWAY_ENV, type GatewayEnv } from '../config/env';
import { buildOpenApiDocument } from './document';

const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
};

/** The OpenAPI document and a docs page served from local assets (works on machines with no internet). */
@Controller()
export class OpenApiController {
  private readonly document: string;

  constructor(@Inject(GATEWAY_ENV) env: GatewayEnv) {
    this.document = JSON.stringify(buildOpenApiDocument(env.SWITCHBOARD_SERVER_URL));
  }

  @Get('openapi.json')
  @Public()
  @Header('Content-Type', 'application/json; charset=utf-8')
  openapi(): string {
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
      .send(readFileSync(join(getAbsoluteFSPath(), file)));
  }
}
