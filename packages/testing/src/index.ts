export * from './infrastructure';
export * from './ports';
export * from './repo';
export * from './stack';
export * from './nats';
export * from './rewrap-cli';
export * from './temporal-cli';
export * from './shared-stacks';
