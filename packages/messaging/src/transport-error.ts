import { SwitchboardError } from '@switchboard/contracts';

/** A failed NATS request as the Switchboard error its caller answers with. */
export function transportError(subject: string, error: unknown): SwitchboardError {
  const code = (error as { code?: string })?.code;
  const service = subject.split('.')[0];
  if (code === '503')
    return new SwitchboardError('service_unavailable', `the ${service} service is not available`);
  if (code === 'TIMEOUT')
    return new SwitchboardError('gateway_timeout', `the ${service} service did not answer in time`);
  // The server refused the publish: this service's NATS user may not call the subject (infra/nats/nats.conf).
  if (code === 'PERMISSIONS_VIOLATION')
    return new SwitchboardError('server_error', `this service's NATS user may not call ${subject}`);
  return new SwitchboardError('service_unavailable', `could not reach the ${service} service`);
}
