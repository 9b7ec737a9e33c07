import type { RunLimits, SandboxRequest } from './sandbox';

/** The CommonJS bundle of an action whose `exec(nango, input)` body is `body`. */
export const actionScript = (body: string) =>
  `"use strict";\nmodule.exports = { default: { type: "action", exec: async (nango, input) => {\n${body}\n} } };`;

/**
 * A sandbox run of an action on a fixed connection, with the given limits: every host call is refused
 * (`script_forbidden_call`) and its name passed to `onHostCall`.
 */
export function sandboxRequest(
  limits: RunLimits,
  code: string,
  input: unknown,
  overrides: Partial<SandboxRequest> = {},
  onHostCall: (name: string) => void = () => undefined,
): SandboxRequest {
  return {
    type: 'action',
    name: 'spec',
    code,
    input,
    connectionId: 'conn-1',
    providerConfigKey: 'github',
    provider: 'github',
    invocationId: '00000000-0000-4000-8000-000000000000',
    variant: 'base',
    limits,
    hostCall: (name) => {
      onHostCall(name);
      return Promise.resolve(
        JSON.stringify({ ok: false, error: { code: 'script_forbidden_call', message: `no ${name} here` } }),
      );
    },
    onWallClock: () => undefined,
    ...overrides,
  };
}
