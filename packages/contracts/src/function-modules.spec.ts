import { FUNCTION_MODULES, requiredModules } from './functions';

describe('requiredModules', () => {
  it('finds every literal require of a CLI bundle, in order, once each', () => {
    const bundle = [
      'var import_zod = require("zod");',
      "var crypto = __toESM(require('crypto'));",
      'var soap = require( `soap` );',
      'const again = require("zod");',
      'const computed = require(name);',
    ].join('\n');
    expect(requiredModules(bundle)).toEqual(['zod', 'crypto', 'soap']);
  });

  it("provides every module of Nango's allow-list", () => {
    expect([...FUNCTION_MODULES].sort()).toEqual([
      'botbuilder',
      'crypto',
      'node:crypto',
      'node:url',
      'soap',
      'unzipper',
      'url',
      'zod',
    ]);
  });
});
