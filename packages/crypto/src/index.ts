export * from './envelope';
export * from './internal-token';
