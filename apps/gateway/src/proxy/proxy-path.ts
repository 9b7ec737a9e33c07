/** Whether a request target is one of the proxy routes (`/proxy`, `/proxy/...`, `/proxy?...`) the front door takes. */
export function isProxyTarget(url: string | undefined): boolean {
  if (url === undefined || !url.startsWith('/proxy')) return false;
  const next = url.charCodeAt(6);
  // End of the target, '/' or '?'.
  return Number.isNaN(next) || next === 47 || next === 63;
}
