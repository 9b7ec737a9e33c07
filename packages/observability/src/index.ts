export * from './tracing';
export { endClientSpan, startClientSpan } from './client-span';
export * from './metrics';
export { recordForeignSpans, type ForeignSpan } from './foreign-spans';
