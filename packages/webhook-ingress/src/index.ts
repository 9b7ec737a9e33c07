export * from './environment-directory';
export * from './provider-webhook';
export * from './webhook-ingress';
