export { ProxyEngineModule, type ProxyEngineOptions } from './proxy-engine.module';
export { proxyEngineEnv, PROXY_ENGINE_ENV, type ProxyEngineEnv } from './proxy-engine.env';
export { ProxyForwarder, type ProxyCall } from './forwarder';
export { ProxyError, fallbackStatus } from './proxy.errors';
export { writeProxyError } from './error-reply';
export { forwardedResponseHeaders, type ReplyHeaders } from './headers';
export { relay } from './relay';
export { PROXY_METHODS, registerProxyRoutes } from './proxy-routes';
export { hasBody } from './request-body';
