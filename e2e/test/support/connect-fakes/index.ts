export { type ConnectFakeProvider, type GithubUser, startConnectFakeProvider } from './provider';
export { appKeyPair, createFakeAppIntegration, fakeOAuthCredentials, startConnectStack } from './stack';
export { connectProvidersYaml } from './providers-yaml';
