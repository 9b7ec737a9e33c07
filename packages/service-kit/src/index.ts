export * from './bootstrap';
export * from './build-output';
export * from './health.registry';
export * from './health.controller';
export * from './service-kit.module';
export * from './database-lifecycle';
export * from './trace-logger';
