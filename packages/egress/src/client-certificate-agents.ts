import { createHash } from 'node:crypto';
import { Agent, buildConnector } from 'undici';
import { egressConnector } from './egress-agent';
import type { EgressPolicy } from './egress-policy';

/** A client certificate and its private key (PEM), presented in the TLS handshake (mutual TLS). */
export interface ClientCertificate {
  cert: string;
  key: string;
}

const MAX_AGENTS = 200;

/**
 * One undici Agent per client certificate, each connecting through the same egress policy as every other
 * provider call (the certificate changes the TLS handshake, not where a connection may go). Agents are
 * cached by a hash of the pair, so a connection's calls share keep-alive sockets, and two connections
 * never share a socket that presented another's certificate. The oldest agent is closed past MAX_AGENTS.
 */
export class ClientCertificateAgents {
  private readonly agents = new Map<string, Agent>();

  constructor(
    private readonly policy: EgressPolicy,
    private readonly connectTimeoutMs: number,
  ) {}

  for(certificate: ClientCertificate): Agent {
    const id = createHash('sha256')
      .update(certificate.cert)
      .update('\0')
      .update(certificate.key)
      .digest('hex');
    const cached = this.agents.get(id);
    if (cached) {
      // Most recently used last, so the eviction below drops the least recently used.
      this.agents.delete(id);
      this.agents.set(id, cached);
      return cached;
    }
    const agent = new Agent({
      connect: egressConnector({
        policy: this.policy,
        connectTimeoutMs: this.connectTimeoutMs,
        connect: buildConnector({
          timeout: this.connectTimeoutMs,
          cert: certificate.cert,
          key: certificate.key,
        }),
      }),
      keepAliveTimeout: 10_000,
    });
    this.agents.set(id, agent);
    if (this.agents.size > MAX_AGENTS) {
      const [oldest, evicted] = this.agents.entries().next().value as [string, Agent];
      this.agents.delete(oldest);
      void evicted.close().catch(() => undefined);
    }
    return agent;
  }

  async close(): Promise<void> {
    const all = [...this.agents.values()];
    this.agents.clear();
    await Promise.all(all.map((agent) => agent.close().catch(() => undefined)));
  }
}
