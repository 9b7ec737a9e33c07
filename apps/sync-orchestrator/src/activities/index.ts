// Everything exported here is registered on the worker; workflows see it as types only.
export * from './ping.activities';
