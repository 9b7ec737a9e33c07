import type { AuthConnectEnv } from '../config/env';
import { ConnectPageServer } from './connect-page.server';

const env = {
  SWITCHBOARD_SERVER_URL: 'https://api.example.com/',
  SWITCHBOARD_CONNECT_URL: 'https://connect.example.com',
  CONNECT_PORT: 0,
  SWITCHBOARD_CONNECT_ALLOWED_ORIGINS: [] as string[],
} as AuthConnectEnv;

describe('ConnectPageServer', () => {
  const app = new ConnectPageServer(env).build();
  afterAll(() => app.close());

  it('serves the page with the API URL, a strict CSP limited to that API, and no referrer', async () => {
    const res = await app.inject({ method: 'GET', url: '/?session_token=nango_connect_session_x' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toContain('<meta name="switchboard-api-url" content="https://api.example.com" />');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['cache-control']).toBe('no-store');
    const csp = String(res.headers['content-security-policy']);
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain('connect-src https://api.example.com');
    expect(csp).not.toContain('unsafe-inline');
  });

  it('serves its script and styles, and nothing else', async () => {
    const js = await app.inject({ method: 'GET', url: '/assets/connect.js' });
    expect(js.statusCode).toBe(200);
    expect(js.headers['content-type']).toMatch(/^text\/javascript/);
    expect(js.body).toContain('session_token');
    // The page's scripts, in the order it runs them: each one is served as JavaScript.
    const page = (await app.inject({ method: 'GET', url: '/' })).body;
    const scripts = Array.from(page.matchAll(/<script src="([^"]+)"><\/script>/g), (match) => match[1] ?? '');
    expect(scripts).toEqual(['/assets/connect-shell.js', '/assets/connect-form.js', '/assets/connect.js']);
    for (const url of scripts) {
      const res = await app.inject({ method: 'GET', url });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/javascript/);
      expect(res.body).toContain('window.SwitchboardConnect');
    }
    expect((await app.inject({ method: 'GET', url: '/assets/connect.css' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/assets/..%2Fconnect-page.server.ts' })).statusCode).toBe(
      404,
    );
    expect((await app.inject({ method: 'GET', url: '/assets/index.html' })).statusCode).toBe(404);
  });

  it('lets no other site frame the page by default, and only the allowed origins when set', async () => {
    const csp = String((await app.inject({ method: 'GET', url: '/' })).headers['content-security-policy']);
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('frame-ancestors *');

    const allowed = new ConnectPageServer({
      ...env,
      SWITCHBOARD_CONNECT_ALLOWED_ORIGINS: ['https://app.customer.example', 'https://admin.customer.example'],
    }).build();
    const res = await allowed.inject({ method: 'GET', url: '/' });
    expect(String(res.headers['content-security-policy'])).toContain(
      'frame-ancestors https://app.customer.example https://admin.customer.example',
    );
    expect(res.body).toContain(
      '<meta name="switchboard-allowed-origins" content="https://app.customer.example https://admin.customer.example" />',
    );
    await allowed.close();
  });
});
