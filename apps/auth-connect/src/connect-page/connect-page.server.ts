import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import Fastify, { type FastifyInstance } from 'fastify';
import { buildOutputPath } from '@switchboard/service-kit';
import { AUTH_CONNECT_ENV, type AuthConnectEnv } from '../config/env';

interface Asset {
  type: string;
  body: string;
}

const escapeAttribute = (value: string) =>
  value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * The connect page, on its own port (CONNECT_PORT) so it can be published on its own host name
 * (SWITCHBOARD_CONNECT_URL). It is static: the browser talks to the public API with the session token,
 * exactly as Nango's Connect UI does; the only server-side value is where that API is.
 */
@Injectable()
export class ConnectPageServer implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('ConnectPage');
  private server: FastifyInstance | undefined;

  constructor(@Inject(AUTH_CONNECT_ENV) private readonly env: AuthConnectEnv) {}

  /** Builds the server without listening (tests inject requests into it). */
  build(): FastifyInstance {
    // The build copies them to dist/connect-page/static: found there from the sources, tsc's output and the
    // service's bundle alike.
    const dir = buildOutputPath(__dirname, 'connect-page/static');
    if (!existsSync(dir)) throw new Error("the connect page's static files are missing from the build");
    const apiUrl = this.env.SWITCHBOARD_SERVER_URL.replace(/\/$/, '');
    const apiOrigin = new URL(apiUrl).origin;
    const read = (file: string) => readFileSync(join(dir, file), 'utf8');
    const allowed = this.env.SWITCHBOARD_CONNECT_ALLOWED_ORIGINS;
    const index = read('index.html')
      .replace('__API_URL__', escapeAttribute(apiUrl))
      .replace('__ALLOWED_ORIGINS__', escapeAttribute(allowed.join(' ')));
    const script = (file: string): Asset => ({ type: 'text/javascript; charset=utf-8', body: read(file) });
    // index.html loads the scripts in this order.
    const assets: Record<string, Asset> = {
      'connect-shell.js': script('connect-shell.js'),
      'connect-form.js': script('connect-form.js'),
      'connect.js': script('connect.js'),
      'connect.css': { type: 'text/css; charset=utf-8', body: read('connect.css') },
    };
    const csp = [
      "default-src 'none'",
      "script-src 'self'",
      "style-src 'self'",
      `img-src 'self' ${apiOrigin} data:`,
      `connect-src ${apiOrigin}`,
      "base-uri 'none'",
      "form-action 'none'",
      // Nango's frontend embeds the page in an iframe on the customer's own site: only the origins the
      // operator allowed may, so no other site can frame it (clickjacking) or read its messages.
      `frame-ancestors ${allowed.length > 0 ? allowed.join(' ') : "'none'"}`,
    ].join('; ');

    const app = Fastify({ logger: false });
    app.addHook('onSend', async (_request, reply) => {
      // The page's URL carries the session token: it must not travel in Referer headers.
      reply.header('referrer-policy', 'no-referrer');
      reply.header('x-content-type-options', 'nosniff');
    });
    app.get('/', async (_request, reply) =>
      reply
        .header('content-security-policy', csp)
        .header('cache-control', 'no-store')
        .type('text/html; charset=utf-8')
        .send(index),
    );
    app.get<{ Params: { file: string } }>('/assets/:file', async (request, reply) => {
      const asset = assets[request.params.file];
      if (!asset) return reply.status(404).type('text/plain').send('Not found');
      return reply.header('cache-control', 'no-cache').type(asset.type).send(asset.body);
    });
    app.get('/health', async () => ({ result: 'ok' }));
    return app;
  }

  async onApplicationBootstrap(): Promise<void> {
    this.server = this.build();
    const address = await this.server.listen({ port: this.env.CONNECT_PORT, host: this.env.CONNECT_HOST });
    this.logger.log(`connect page on ${address} (public URL ${this.env.SWITCHBOARD_CONNECT_URL})`);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.server?.close();
  }
}
