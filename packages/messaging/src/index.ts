export * from './nats-handler.decorator';
export * from './nats-requester';
export * from './messaging.module';
export * from './jetstream';
export * from './nats-connection';
export * from './raw-reply';
export * from './broadcast';
export * from './payload-depth';
