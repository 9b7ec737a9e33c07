import { deployBodySchema } from '@switchboard/contracts';
import { deployBodyChunks } from './deploy.controller';

describe('deployBodyChunks', () => {
  it('writes the same JSON as JSON.stringify, one piece per function', () => {
    const flow = (name: string) => ({
      syncName: name,
      providerConfigKey: 'hub',
      type: 'action',
      fileBody: { js: `exports.default = "${name}\u00e9\\n"`, ts: '// "quoted"' },
    });
    const body = deployBodySchema.parse({
      flowConfigs: [flow('a'), flow('b')],
      onEventScriptsByProvider: [
        {
          providerConfigKey: 'hub',
          scripts: [{ name: 'hello', event: 'post-connection-creation', fileBody: { js: 'x' } }],
        },
      ],
      deployMode: 'integration',
      sdkVersion: '0.71.10-zero',
    });
    const pieces = [...deployBodyChunks(body)];
    expect(Buffer.concat(pieces).toString('utf8')).toBe(JSON.stringify(body));
    expect(pieces.length).toBeGreaterThan(4);
    const bare = deployBodySchema.parse({ flowConfigs: [] });
    expect(Buffer.concat([...deployBodyChunks(bare)]).toString('utf8')).toBe(JSON.stringify(bare));
  });
});
