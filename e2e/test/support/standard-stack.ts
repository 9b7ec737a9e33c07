import { freePort, startStack, type Stack, type StackOptions } from '@switchboard/testing';
import { STACK_READY_TIMEOUT_MS } from './processes';
import { writeProxyProvidersFile } from './proxy-fakes';

/**
 * The standard stack: the configuration most e2e files need, started once per jest worker and shared
 * by the files that use it (each gets an account of its own). The fake providers of proxy-fakes.ts in the
 * catalog; loopback allowed as a destination where the fakes, receivers and scripts' servers are reached
 * (the gateway, the proxy, the functions' `uncontrolledFetch`, the webhook relay); webhook retries and
 * polling at test speed; the gateway's API-key cache short enough for a revocation to show in a test.
 *
 * A file that needs something else (another value of one of these, a variable that changes what every
 * file sees, or to stop, restart or add processes) starts a stack of its own with `startStack(...)`.
 */
export function standardStackOptions(): StackOptions {
  return {
    env: { SWITCHBOARD_PROVIDERS_FILE: writeProxyProvidersFile() },
    serviceEnv: {
      gateway: { SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1', SWITCHBOARD_KEY_CACHE_TTL_MS: '200' },
      proxy: { SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1' },
      // uncontrolledFetch's own list: the loopback fakes' address only (names such as localhost stay refused).
      'functions-runtime': { SWITCHBOARD_FUNCTIONS_EGRESS_ALLOW: '127.0.0.1' },
      'webhook-relay': {
        SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1',
        SWITCHBOARD_WEBHOOK_RETRY_SCHEDULE: '0,300ms,600ms',
        SWITCHBOARD_WEBHOOK_POLL_INTERVAL: '100ms',
      },
    },
  };
}

/** The jest worker's standard stack (started by the first file that asks), with a fresh account for this file. */
export function standardStack(): Promise<Stack> {
  // Twice the usual wait, as for the other stacks that boot beside a file of the other worker booting its
  // own on two busy cores (a file's start-up hook may allow less: it fails first then).
  return startStack({ ...standardStackOptions(), shared: true, readyTimeoutMs: 2 * STACK_READY_TIMEOUT_MS });
}

/**
 * The standard stack seen through a gateway of this file's own, started with the standard gateway's
 * environment plus `env` (another body limit, the remote webhook ingress, ...): `gatewayUrl` is that
 * gateway, which serves only this file's requests and stops when the file releases the stack. The other
 * services are the shared ones.
 */
export async function standardStackWithGateway(env: Record<string, string>): Promise<Stack> {
  const shared = await standardStack();
  try {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    await shared.startReplica('gateway', { SWITCHBOARD_SERVER_URL: url, ...env, PORT: String(port) });
    return { ...shared, gatewayUrl: url };
  } catch (error) {
    await shared.stop();
    throw error;
  }
}
