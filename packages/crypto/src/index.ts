export * from './envelope';
export * from './internal-token';
export * from './proxy-signature';
