import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RouteAccess } from '../access/route-access';
import { sendError } from '../http/error-reply';

/**
 * The console's CSP: its own scripts, styles and API only. No inline script; inline *styles* are allowed
 * because the component library sets `style` attributes and its CSS variables (styles cannot run code).
 * `frame-ancestors 'none'` (and X-Frame-Options for old browsers): the console is never framed (clickjacking).
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy': CONSOLE_CSP,
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
};

/** The default location of the built console: the `@switchboard/console` package's `dist`. */
export function defaultConsoleDir(): string | null {
  try {
    return join(dirname(require.resolve('@switchboard/console/package.json')), 'dist');
  } catch {
    return null;
  }
}

const PUBLIC: { access: RouteAccess } = { access: { public: true } };

/**
 * Serves the console's single-page app at `/console` from its built files: hashed assets under
 * `/console/assets/` with a year's immutable cache, every other `/console/*` path the app's index.html
 * (the app's router owns those URLs) with `no-cache`, so a deploy is picked up at the next load.
 * `/console/api/*` is the console's HTTP API, never the page: an unknown route there is a JSON 404.
 * These routes need no credentials (the page holds no data; every call it makes is authenticated).
 */
export class ConsoleStatic {
  constructor(
    private readonly root: string | null,
    private readonly traceUrl: string | null,
  ) {}

  async register(fastify: FastifyInstance): Promise<void> {
    const root = this.root && existsSync(join(this.root, 'index.html')) ? this.root : null;
    if (root) {
      // `serve: false`: only the routes below, which carry the access marker and our headers.
      await fastify.register(fastifyStatic, { root, serve: false, decorateReply: true });
    } else {
      fastify.log.warn({ root: this.root }, 'the console is not built: /console answers 404');
    }
    const page = (request: FastifyRequest, reply: FastifyReply) => this.page(root, request, reply);
    fastify.get('/console', { config: PUBLIC }, page);
    fastify.get('/console/*', { config: PUBLIC }, page);
    fastify.get('/console/config.json', { config: PUBLIC }, (_request, reply) =>
      reply.headers(SECURITY_HEADERS).header('Cache-Control', 'no-cache').send({ trace_url: this.traceUrl }),
    );
  }

  private async page(root: string | null, request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const rest = ((request.params as { '*'?: string })['*'] ?? '').replace(/^\/+/, '');
    if (rest === 'api' || rest.startsWith('api/')) {
      return void (await sendError(reply, 'not_found', 'No such console API route'));
    }
    if (!root) return void (await sendError(reply, 'not_found', 'The console is not built on this gateway'));
    void reply.headers(SECURITY_HEADERS);
    if (rest.startsWith('assets/')) {
      const file = rest.slice('assets/'.length);
      // Vite's file names: a name, a content hash, an extension; nothing else is an asset of ours.
      if (!/^[A-Za-z0-9_.-]+$/.test(file) || !existsSync(join(root, 'assets', file))) {
        return void (await sendError(reply, 'not_found', 'No such console asset'));
      }
      return void (await reply.sendFile(`assets/${file}`, root, {
        immutable: true,
        maxAge: '365d',
        dotfiles: 'deny',
      }));
    }
    void reply.header('Cache-Control', 'no-cache');
    await reply.sendFile('index.html', root, { cacheControl: false, dotfiles: 'deny' });
  }
}
