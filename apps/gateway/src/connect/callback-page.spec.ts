import { renderCallbackPage } from './callback-page';

const CONNECT_URL = 'https://connect.example.com';

describe('renderCallbackPage', () => {
  it('tells the opener about a success with the messages @nangohq/frontend listens for', () => {
    const page = renderCallbackPage(
      { ok: true, providerConfigKey: 'github', connectionId: 'c-1', isPending: false },
      CONNECT_URL,
    );
    expect(page.status).toBe(200);
    expect(page.html).toContain('"type":"nango_oauth_callback_success"');
    expect(page.html).toContain("new BroadcastChannel('nango-oauth-callback')");
    expect(page.html).toContain(
      'https://connect.example.com/?oauth_result=success&amp;provider_config_key=github&amp;connection_id=c-1',
    );
  });

  it('answers 400 with the error type and message for a failure', () => {
    const page = renderCallbackPage(
      {
        ok: false,
        providerConfigKey: 'github',
        connectionId: null,
        errorType: 'state_err',
        message: 'This authorization was already used',
      },
      CONNECT_URL,
    );
    expect(page.status).toBe(400);
    expect(page.html).toContain('"errorType":"state_err"');
    expect(page.html).toContain('role="alert">This authorization was already used</p>');
  });

  it('keeps provider-controlled text inert in the markup and in the script data', () => {
    const hostile = '</script><script>alert(1)</script><img src=x onerror=alert(2)>';
    const page = renderCallbackPage(
      { ok: false, providerConfigKey: 'k', connectionId: null, errorType: 'callback_err', message: hostile },
      CONNECT_URL,
    );
    expect(page.html).not.toContain('<script>alert(1)');
    expect(page.html).not.toContain('<img src=x');
    expect(page.html).toContain('&lt;/script&gt;&lt;script&gt;alert(1)');
    expect(page.html).toContain('\\u003c/script>\\u003cscript>alert(1)');
    // Only the page's own nonce-bearing script may run.
    const nonce = /script-src 'nonce-([^']+)'/.exec(page.csp)?.[1];
    expect(nonce).toBeDefined();
    expect(page.html.match(/<script nonce="/g)).toHaveLength(1);
    expect(page.html).toContain(`<script nonce="${nonce}">`);
  });

  it("posts its outcome only to the connect page's origin and the allowed origins, never to '*'", () => {
    const page = renderCallbackPage(
      { ok: true, providerConfigKey: 'github', connectionId: 'c-1', isPending: false },
      `${CONNECT_URL}/connect`,
      ['https://app.customer.example'],
    );
    expect(page.html).not.toContain("'*'");
    expect(page.html).toContain('"targets":["https://connect.example.com","https://app.customer.example"]');
  });
});
