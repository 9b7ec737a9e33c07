import { SwitchboardError } from '@switchboard/contracts';

/** The relay's coded errors (one class per bounded context). */
export class WebhookRelayError extends SwitchboardError {}
