import { SwitchboardError } from '@switchboard/contracts';

/** Coded errors of the connections-vault context. */
export class VaultError extends SwitchboardError {}
