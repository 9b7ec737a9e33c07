import { randomBytes } from 'node:crypto';
import type { CallbackOutcome } from '@switchboard/contracts';

const escapeHtml = (value: string) =>
  value
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');

/** JSON inside a <script> element: `<` escaped so no value can close the element. */
const scriptJson = (value: unknown) => JSON.stringify(value).replace(/</g, '\\u003c');

export interface RenderedPage {
  status: number;
  html: string;
  csp: string;
}

/**
 * The page the provider's redirect lands on. In a popup it tells its opener (Switchboard's connect page,
 * or `@nangohq/frontend`) how the authorization went, with the messages Nango's callback page sends, and
 * closes itself. Opened as a full page (no opener) it sends the browser back to the connect page, which
 * shows the outcome. It carries no secret: only the integration key, connection id and error text.
 */
export function renderCallbackPage(
  outcome: CallbackOutcome,
  connectUrl: string,
  allowedOrigins: readonly string[] = [],
): RenderedPage {
  // Its opener is Switchboard's connect page or the customer's app (@nangohq/frontend); no other origin
  // may read the outcome (it names the connection).
  const targets = [...new Set([new URL(connectUrl).origin, ...allowedOrigins])];
  const nonce = randomBytes(16).toString('base64');
  const html = callbackHtml(outcome, nonce, {
    message: openerMessage(outcome),
    ok: outcome.ok,
    back: backToConnectPage(outcome, connectUrl).toString(),
    targets,
  });
  const csp = [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
  return { status: outcome.ok ? 200 : 400, html, csp };
}

/** The message Nango's callback page posts to its opener. */
function openerMessage(outcome: CallbackOutcome): Record<string, unknown> {
  return outcome.ok
    ? {
        type: 'nango_oauth_callback_success',
        providerConfigKey: outcome.providerConfigKey,
        connectionId: outcome.connectionId,
        isPending: outcome.isPending,
      }
    : {
        type: 'nango_oauth_callback_error',
        providerConfigKey: outcome.providerConfigKey,
        connectionId: outcome.connectionId,
        payload: { errorType: outcome.errorType, message: outcome.message },
      };
}

/** The connect page's address with the outcome in its query (where a page with no opener goes). */
function backToConnectPage(outcome: CallbackOutcome, connectUrl: string): URL {
  const back = new URL(connectUrl);
  back.searchParams.set('oauth_result', outcome.ok ? 'success' : 'error');
  if (outcome.providerConfigKey) back.searchParams.set('provider_config_key', outcome.providerConfigKey);
  if (outcome.ok) {
    back.searchParams.set('connection_id', outcome.connectionId);
    if (outcome.displayName) back.searchParams.set('display_name', outcome.displayName);
  } else back.searchParams.set('error_type', outcome.errorType);
  return back;
}

interface PageData {
  message: Record<string, unknown>;
  ok: boolean;
  back: string;
  targets: string[];
}

function callbackHtml(outcome: CallbackOutcome, nonce: string, data: PageData): string {
  const title = outcome.ok ? 'Connected' : 'The connection failed';
  const text = outcome.ok ? 'Your account is connected. You can close this window.' : outcome.message;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)}</title>
<style nonce="${nonce}">
body{font:15px/1.5 system-ui,sans-serif;display:flex;justify-content:center;padding:48px 16px;margin:0;color:#1b1d21;background:#f4f5f7}
main{max-width:420px;background:#fff;border:1px solid #d6d9df;border-radius:14px;padding:24px}
h1{font-size:1.25rem;margin:0 0 8px}.error{color:#b42318}a{color:#2563eb}
</style>
</head>
<body>
<main>
<h1 id="title" tabindex="-1">${escapeHtml(title)}</h1>
<p${outcome.ok ? '' : ' class="error" role="alert"'}>${escapeHtml(text)}</p>
<p><a id="back" href="${escapeHtml(data.back)}">Back to the connect page</a></p>
</main>
<script type="application/json" id="outcome">${scriptJson(data)}</script>
<script nonce="${nonce}">
(function () {
  var data = JSON.parse(document.getElementById('outcome').textContent);
  document.getElementById('title').focus();
  var told = false;
  try {
    if (window.opener && !window.opener.closed) {
      data.targets.forEach(function (origin) { window.opener.postMessage(data.message, origin); });
      told = true;
    }
  } catch (e) {}
  try { var channel = new BroadcastChannel('nango-oauth-callback'); channel.postMessage(data.message); channel.close(); } catch (e) {}
  if (told) {
    window.addEventListener('message', function (event) {
      if (event.data && event.data.type === 'nango_oauth_callback_ack') window.close();
    });
    if (data.ok) setTimeout(function () { window.close(); }, 500);
  } else {
    setTimeout(function () { window.location.replace(data.back); }, data.ok ? 800 : 4000);
  }
})();
</script>
</body>
</html>
`;
}
