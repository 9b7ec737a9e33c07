/** Calls to providers that turn what an end user did (a code, a verifier, a typed secret) into credentials. */
export * from './connection-config';
export * from './credentials';
export * from './exchange.errors';
export * from './form-tokens';
export * from './github-app.client';
export * from './oauth1.client';
export * from './oauth2-token.client';
export * from './post-connect';
export { DEFAULT_PROVIDER_TIMEOUT_MS } from './provider-http';
export * from './tba';
export * from './templates';
