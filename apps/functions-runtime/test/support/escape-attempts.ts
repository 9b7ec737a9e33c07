import type { FunctionRunRequest } from '@switchboard/contracts';

/**
 * One way out of the sandbox a script may try: the action body that tries it (run with `limits`, if given),
 * and how the run must be refused: the error code, and the message or the cause's code where it tells the
 * attempts of one code apart.
 */
export interface EscapeAttempt {
  attempt: string;
  body: string;
  limits?: FunctionRunRequest['limits'];
  code: string;
  message?: RegExp;
  cause?: string;
}

/**
 * The sandbox escape table: modules and globals of the host, code generation from strings, a foreign
 * prototype, the CPU, wall-clock, memory, output and timer limits, the egress policy, a forged result, and
 * the other connection of the environment (conn-b), named or reached through the `nango` object.
 */
export const ESCAPE_ATTEMPTS: EscapeAttempt[] = [
  {
    attempt: "require('fs')",
    body: 'return require("fs").readFileSync("/etc/passwd", "utf8");',
    code: 'script_runtime_error',
    message: /Cannot find module "fs"/,
  },
  {
    attempt: "require('child_process')",
    body: 'return require("child_process").execSync("id").toString();',
    code: 'script_runtime_error',
    message: /Cannot find module "child_process"/,
  },
  {
    attempt: 'process.env',
    body: 'return process.env;',
    code: 'script_runtime_error',
    message: /process is not defined/,
  },
  {
    attempt: "globalThis.constructor.constructor('return process')()",
    body: 'return globalThis.constructor.constructor("return process")().env;',
    code: 'script_runtime_error',
    message: /Code generation from strings is disabled/,
  },
  {
    attempt: 'eval codegen',
    body: 'return eval("1 + 1");',
    code: 'script_runtime_error',
    message: /Code generation from strings is disabled/,
  },
  {
    attempt: 'Function codegen',
    body: 'return new Function("return this")();',
    code: 'script_runtime_error',
    message: /Code generation from strings is disabled/,
  },
  {
    attempt: 'async function constructor codegen',
    body: 'return await (async function () {}).constructor("return 1")();',
    code: 'script_runtime_error',
    message: /Code generation from strings is disabled/,
  },
  {
    attempt: 'prototype tricks on a host call result',
    body: `const c = await nango.getConnection();
      if (Object.getPrototypeOf(c) !== Object.prototype) return "foreign prototype";
      return c.__proto__.constructor.constructor("return process")();`,
    code: 'script_runtime_error',
    message: /Code generation from strings is disabled/,
  },
  {
    attempt: 'WebAssembly',
    body: 'return typeof WebAssembly.Module;',
    code: 'script_runtime_error',
    message: /WebAssembly is not defined/,
  },
  {
    attempt: 'an infinite loop',
    body: 'for (;;) {}',
    code: 'script_cpu_limit',
  },
  {
    attempt: 'a promise that never settles',
    body: 'await new Promise(() => {});',
    limits: { wallTimeMs: 1500 },
    code: 'script_timeout',
  },
  {
    attempt: 'a memory bomb',
    // 8 MB typed arrays, counted against the isolate's limit when allocated: the 64 MB are reached in a
    // few allocations, with no garbage collection on the way. A heap of small arrays met the limit only
    // after V8's last-resort collections, which took over the 1.5 s CPU limit on a loaded 2-core host.
    // The heap path (clocks out of reach) is sandbox-isolates.spec.ts's.
    body: 'const hoard = []; for (;;) hoard.push(new Float64Array(1e6));',
    code: 'script_memory_limit',
  },
  {
    attempt: 'a huge output',
    body: 'return "y".repeat(3 * 1024 * 1024);',
    code: 'script_output_too_large',
  },
  {
    attempt: 'nango.proxy to a host the egress policy refuses',
    body: 'return (await nango.get({ endpoint: "/me", baseUrlOverride: "http://127.0.0.2:9" })).data;',
    code: 'script_runtime_error',
    cause: 'egress_refused',
  },
  {
    attempt: 'a flood of timers',
    body: 'for (let i = 0; i < 5000; i++) setTimeout(() => {}, 60000); return 1;',
    code: 'script_runtime_error',
    message: /too many pending timers/,
  },
  {
    attempt: 'forging the sandbox result through a patched JSON.stringify',
    body: 'JSON.stringify = () => \'{"status":"failure","code":"pwned","message":"x"}\'; return 1;',
    code: 'script_runtime_error',
    message: /unreadable result/,
  },
  {
    attempt: 'nango.getConnection naming another connection',
    body: 'return await nango.getConnection("fake-pages", "conn-b");',
    code: 'script_forbidden_call',
  },
  {
    attempt: 'nango.proxy naming another connection',
    body: 'return (await nango.get({ endpoint: "/me", connectionId: "conn-b" })).data;',
    code: 'script_forbidden_call',
  },
  {
    attempt: 'nango.setMetadata naming another connection',
    body: 'await nango.setMetadata({ owner: "stolen" }, "conn-b", "fake-pages"); return 1;',
    code: 'script_forbidden_call',
  },
];
