import {
  ClientCertificateAgents,
  createEgressAgent,
  EgressPolicy,
  type ClientCertificate,
} from '@switchboard/egress';
import type { Agent } from 'undici';

/** A token endpoint or a verification endpoint that does not connect in this time is unreachable. */
const CONNECT_TIMEOUT_MS = 10_000;

let agent: Agent | undefined;
let policyInForce = new EgressPolicy('');
let certificateAgents: ClientCertificateAgents | undefined;

/**
 * The dispatcher every call auth-connect makes to a provider goes through (token exchanges, refreshes,
 * OAuth 1.0a and app-installation tokens, credential checks). Their URLs are catalog templates filled with
 * connection config an end user may have typed (`https://${connectionConfig.subdomain}.example.com`), so
 * they get the proxy's egress policy: the host is resolved once, refused when any address is private,
 * loopback, link-local or metadata, and the checked address is the one connected to. Until
 * `configureProviderEgress` runs, nothing is excepted.
 */
export function providerEgress(): Agent {
  return (agent ??= createEgressAgent({
    policy: new EgressPolicy(''),
    connectTimeoutMs: CONNECT_TIMEOUT_MS,
  }));
}

/** At boot, from SWITCHBOARD_TOKEN_EGRESS_ALLOW or SWITCHBOARD_EGRESS_ALLOW (tests: `127.0.0.1` for fake providers on loopback). */
export function configureProviderEgress(allow: string | EgressPolicy): void {
  const previous = agent;
  const policy = typeof allow === 'string' ? new EgressPolicy(allow) : allow;
  agent = createEgressAgent({ policy, connectTimeoutMs: CONNECT_TIMEOUT_MS });
  void previous?.close().catch(() => undefined);
  policyInForce = policy;
  const previousCertificateAgents = certificateAgents;
  certificateAgents = undefined;
  void previousCertificateAgents?.close();
}

/** The same egress policy, presenting a client certificate in the handshake (mutual TLS, e.g. ADP). */
export function providerEgressWithCertificate(certificate: ClientCertificate): Agent {
  return (certificateAgents ??= new ClientCertificateAgents(policyInForce, CONNECT_TIMEOUT_MS)).for(
    certificate,
  );
}

export async function closeProviderEgress(): Promise<void> {
  const currentCertificateAgents = certificateAgents;
  certificateAgents = undefined;
  await currentCertificateAgents?.close();
  const current = agent;
  agent = undefined;
  await current?.close().catch(() => undefined);
}
