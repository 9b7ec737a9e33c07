import { SwitchboardError } from '@switchboard/contracts';
import type { NatsConnection } from 'nats';

/** Whether this process's NATS connection is down now, and how often it went down so far. */
interface LinkState {
  down: boolean;
  drops: number;
}

const links = new WeakMap<NatsConnection, LinkState>();

/**
 * The state of a connection's link to the NATS server, followed from its status events (one listener per
 * connection, started on first use). nats.js keeps what is published while it reconnects and sends it
 * once back: a request made then would wait for its whole timeout and might still run later, so callers
 * refuse it at once instead (`unreachable`).
 */
export function linkState(nc: NatsConnection): LinkState {
  let state = links.get(nc);
  if (state) return state;
  const created: LinkState = { down: false, drops: 0 };
  links.set(nc, created);
  const status = (nc as Partial<Pick<NatsConnection, 'status'>>).status;
  if (typeof status === 'function') {
    void (async () => {
      for await (const event of status.call(nc)) {
        if (event.type === 'disconnect') {
          created.down = true;
          created.drops++;
        } else if (event.type === 'reconnect') created.down = false;
      }
    })().catch(() => undefined);
  }
  return created;
}

/** The error of a request not sent because NATS is out of reach: nothing was done, try again. */
export function unreachable(subject: string): SwitchboardError {
  const service = subject.split('.')[0];
  return new SwitchboardError(
    'service_unavailable',
    `NATS is not reachable from this service: the ${service} service cannot be asked now; try again shortly`,
  );
}

/**
 * A failed NATS request as the Switchboard error its caller answers with. A timeout while this process's
 * link to NATS went down (`dropped`) is the link's fault, not the service's: `service_unavailable`.
 */
export function transportError(subject: string, error: unknown, dropped = false): SwitchboardError {
  const code = (error as { code?: string })?.code;
  const service = subject.split('.')[0];
  if (code === '503')
    return new SwitchboardError('service_unavailable', `the ${service} service is not available`);
  if (code === 'TIMEOUT' && dropped) return unreachable(subject);
  if (code === 'TIMEOUT')
    return new SwitchboardError('gateway_timeout', `the ${service} service did not answer in time`);
  // The server refused the publish: this service's NATS user may not call the subject (infra/nats/nats.conf).
  if (code === 'PERMISSIONS_VIOLATION')
    return new SwitchboardError('server_error', `this service's NATS user may not call ${subject}`);
  return new SwitchboardError('service_unavailable', `could not reach the ${service} service`);
}
