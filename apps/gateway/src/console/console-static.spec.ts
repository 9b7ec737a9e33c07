import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { CONSOLE_CSP, ConsoleStatic } from './console-static';

describe('the console at /console', () => {
  let dist: string;
  let app: FastifyInstance;

  beforeAll(async () => {
    dist = mkdtempSync(join(tmpdir(), 'console-dist-'));
    mkdirSync(join(dist, 'assets'));
    writeFileSync(join(dist, 'index.html'), '<!doctype html><title>console</title>');
    writeFileSync(join(dist, 'assets', 'index-abc123.js'), 'console.log(1)');
    writeFileSync(join(dist, '.secret'), 'no');
    app = Fastify();
    await new ConsoleStatic(dist, 'https://traces.example.com/trace/{trace_id}').register(app);
    await app.ready();
  });

  afterAll(async () => {
    await app.close();
    rmSync(dist, { recursive: true, force: true });
  });

  it.each(['/console', '/console/', '/console/connections/recordhub/abc', '/console/sign-in?next=%2F'])(
    'answers the app for %s, revalidated at every load, under the strict CSP',
    async (url) => {
      const res = await app.inject({ method: 'GET', url });
      expect(res.statusCode).toBe(200);
      expect(res.body).toBe('<!doctype html><title>console</title>');
      expect(res.headers['content-type']).toContain('text/html');
      expect(res.headers['cache-control']).toBe('no-cache');
      expect(res.headers['content-security-policy']).toBe(CONSOLE_CSP);
      expect(res.headers['x-frame-options']).toBe('DENY');
    },
  );

  it('allows no inline script and no framing', () => {
    expect(CONSOLE_CSP).toContain("script-src 'self'");
    expect(CONSOLE_CSP).not.toMatch(/script-src[^;]*unsafe-inline/);
    expect(CONSOLE_CSP).toContain("frame-ancestors 'none'");
  });

  it('serves hashed assets with a long immutable cache', async () => {
    const res = await app.inject({ method: 'GET', url: '/console/assets/index-abc123.js' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe('console.log(1)');
    expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
  });

  it.each(['/console/assets/missing.js', '/console/assets/..%2f.secret', '/console/assets/.secret'])(
    'answers 404 in the error shape for %s, never another file',
    async (url) => {
      const res = await app.inject({ method: 'GET', url });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ error: { code: 'not_found', message: 'No such console asset' } });
    },
  );

  it('answers the app, never the file, for any other path of the build folder', async () => {
    for (const url of ['/console/.secret', '/console/index.html/..%2f.secret']) {
      const res = await app.inject({ method: 'GET', url });
      expect(res.body).toBe('<!doctype html><title>console</title>');
    }
  });

  it('never answers the page for an unknown console API route', async () => {
    const res = await app.inject({ method: 'GET', url: '/console/api/nope' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: { code: 'not_found', message: 'No such console API route' } });
  });

  it('tells the app where traces are shown', async () => {
    const res = await app.inject({ method: 'GET', url: '/console/config.json' });
    expect(res.json()).toEqual({ trace_url: 'https://traces.example.com/trace/{trace_id}' });
  });

  it('answers 404 when the console is not built', async () => {
    const bare = Fastify({ logger: false });
    await new ConsoleStatic(join(dist, 'nowhere'), null).register(bare);
    const res = await bare.inject({ method: 'GET', url: '/console/integrations' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({
      error: { code: 'not_found', message: 'The console is not built on this gateway' },
    });
    await bare.close();
  });
});
