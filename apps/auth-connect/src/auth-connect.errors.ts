import { SwitchboardError } from '@switchboard/contracts';

/** Coded errors of the auth-connect context. */
export class AuthConnectError extends SwitchboardError {}
