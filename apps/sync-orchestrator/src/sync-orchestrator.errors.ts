import { SwitchboardError } from '@switchboard/contracts';

/** Coded errors of the sync-orchestrator context. */
export class OrchestratorError extends SwitchboardError {}
