import { globSync } from 'node:fs';
import { join } from 'node:path';
import { natsHandlerCoverage } from '@switchboard/messaging';

describe('NATS handlers of webhook-relay', () => {
  it('answer every request subject the service owns in the contracts, each with its definition', () => {
    // Decorators run when a class is defined: loading the handler files registers every handler.
    for (const file of globSync('**/*.handlers.ts', { cwd: __dirname })) require(join(__dirname, file));
    expect(natsHandlerCoverage('webhook-relay')).toEqual({ withoutDefinition: [], withoutHandler: [] });
  });
});
