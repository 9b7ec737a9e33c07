// Built by scripts/build-sandbox-lib.mjs into one script that every sandbox context evaluates before the
// prelude. Only pure JavaScript goes in here: the isolate has no Node APIs at all.
//
// Each part is a function that evaluates its module on first use in a context (esbuild wraps a
// `require`d module in a lazy initialiser): evaluating zod, URL and Buffer costs a run several
// milliseconds of CPU (README, "Isolates"), and most runs touch only some of them.
const once = (load) => {
  let loaded = false;
  let loading = false;
  let value;
  const get = () => {
    if (!loaded) {
      // Asked again while loading (core-js's URL looks for a native URL on the global object, whose getter
      // loads this very part): nothing yet, so the module polyfills instead of keeping a half-made export.
      if (loading) return undefined;
      loading = true;
      try {
        value = load();
        loaded = true;
      } finally {
        loading = false;
      }
    }
    return value;
  };
  // What is loaded already, without loading it.
  get.peek = () => (loaded ? value : undefined);
  return get;
};

globalThis.__sandboxLib = {
  zod: once(() => require('sandbox-zod')),
  URL: once(() => require('core-js-pure/stable/url')),
  URLSearchParams: once(() => require('core-js-pure/stable/url-search-params')),
  Buffer: once(() => require('buffer').Buffer),
  // unzipper's Open.buffer (src/sandbox/prelude/modules.ts): fflate's browser build, pure JavaScript.
  fflate: once(() => require('fflate/browser')),
  // require('soap') (src/sandbox/prelude/modules.ts): a SOAP client over fast-xml-parser, its HTTP through uncontrolledFetch.
  soap: once(() => require('./soap.js').createSoapModule),
  // require('botbuilder') (src/sandbox/prelude/modules.ts): the Bot Framework SDK's message and card builders, plain data only.
  botbuilder: once(() => require('./botbuilder.js').createBotbuilderModule),
};
