export { EgressPolicy, type EgressVerdict } from './egress-policy';
export {
  EgressRefusedError,
  createEgressAgent,
  egressConnector,
  systemResolver,
  type EgressAgentOptions,
  type ResolvedAddress,
  type Resolver,
} from './egress-agent';
export { ClientCertificateAgents, type ClientCertificate } from './client-certificate-agents';
