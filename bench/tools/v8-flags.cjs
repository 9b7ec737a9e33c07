// Preloaded with `--require` by the benches: sets BENCH_V8_FLAGS (e.g. `--trace-gc`, which Node refuses in
// NODE_OPTIONS) in this process's V8 before the service starts.
require('node:v8').setFlagsFromString(process.env.BENCH_V8_FLAGS ?? '');
