export * from './api-client';
export * from './commands';
