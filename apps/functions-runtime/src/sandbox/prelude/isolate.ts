/**
 * What the prelude sees of the host and of the library (types only: inside the isolate there is no Node,
 * and the references are isolated-vm's, reached through their `apply`/`applySync`).
 */

/** A host function the isolate holds a reference to. */
export interface HostReference {
  applySync(receiver: undefined, args: unknown[], options?: object): unknown;
  apply(receiver: undefined, args: unknown[], options?: object): Promise<unknown>;
}

/** One part of the library (sandbox-lib/entry.js): evaluated on first call; `peek` does not evaluate it. */
export interface LibraryPart<T = any> {
  (): T;
  peek(): T | undefined;
}

export const PARTS = ['zod', 'URL', 'URLSearchParams', 'Buffer', 'fflate', 'soap'] as const;
export type PartName = (typeof PARTS)[number];

export type SandboxLib = Record<PartName | 'botbuilder', LibraryPart>;

/** The run's metadata, as sandbox.ts sends it to `bind` (JSON). */
export interface RunMeta {
  type: string;
  entry?: string;
  variant?: string;
  lastSyncDate?: string | null;
  connectionId?: string;
  providerConfigKey?: string;
  provider?: string;
  invocationId?: string;
  attributes?: Record<string, unknown> | null;
  logLineChars: number;
  outputLimitBytes: number;
}

/** A script's value of unknown shape: scripts hand the prelude whatever they like. */
export type ScriptValue = any;
