export { ProxyEngineModule, type ProxyEngineOptions } from './proxy-engine.module';
export { proxyEngineEnv, PROXY_ENGINE_ENV, type ProxyEngineEnv } from './proxy-engine.env';
export { ProxyForwarder, type ProxyCall } from './forwarder';
export { ProxyError, fallbackStatus } from './proxy.errors';
export { writeProxyError } from './error-reply';
export { forwardedResponseHeaders } from './headers';
export { relay } from './relay';

/** Every method the official client can send on `/proxy`, plus HEAD and OPTIONS. */
export const PROXY_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'PROPFIND', 'REPORT'];
