import { createHash, createHmac, createSign, createVerify, generateKeyPairSync } from 'node:crypto';
import { zipSync } from 'fflate';
import { configurePool, runInSandbox, type SandboxRequest } from './sandbox';
import { actionScript as action, sandboxRequest } from './sandbox-request.fixture';

/**
 * The modules and globals a script requires (crypto, unzipper) and the sandbox-only SDK calls
 * (setLogger, getFlowAttributes), against Node's own results. Needs `dist/sandbox-lib.js` (the app's build).
 */

const LIMITS = {
  memoryMb: 64,
  cpuTimeMs: 5000,
  wallTimeMs: 10_000,
  outputBytes: 1024 * 1024,
  logLines: 100,
  logLineChars: 200,
  logTotalChars: 100_000,
  abortGraceMs: 500,
};
const request = (code: string, input: unknown, overrides: Partial<SandboxRequest> = {}): SandboxRequest =>
  sandboxRequest(LIMITS, code, input, overrides);

async function output(code: string, input: unknown = {}, overrides: Partial<SandboxRequest> = {}) {
  const result = await runInSandbox(request(code, input, overrides));
  if (result.status !== 'success') throw new Error(JSON.stringify(result.error));
  return { output: JSON.parse(result.outputJson ?? 'null') as Record<string, unknown>, logs: result.logs };
}

describe("require('crypto') and the crypto global", () => {
  const text = 'héllo wörld, ' + 'x'.repeat(1000);

  it('hashes as Node does: md5/sha1/sha256/sha512, hex/base64/latin1 digests, chained updates and Buffer input', async () => {
    const { output: out } = await output(
      action(`
        const crypto = require('crypto');
        const out = {};
        for (const alg of ['md5', 'sha1', 'sha256', 'sha512']) {
          out[alg + ':hex'] = crypto.createHash(alg).update(input.text).digest('hex');
          out[alg + ':base64'] = crypto.createHash(alg).update(input.text.slice(0, 5)).update(Buffer.from(input.text.slice(5))).digest('base64');
        }
        out.latin1 = crypto.createHash('sha256').update('abc').digest().toString('latin1');
        out.buffer = crypto.createHash('sha1').update('abc').digest().toString('hex');
        out.hex = crypto.createHash('sha256').update('616263', 'hex').digest('hex');
        const h = crypto.createHash('sha256').update('ab');
        out.copy = h.copy().update('c').digest('hex');
        out.orig = h.digest('hex');
        try { h.digest('hex'); } catch (e) { out.twice = e.message; }
        try { crypto.createHash('nope'); } catch (e) { out.unknown = e.message; }
        return out;`),
      { text },
    );
    for (const alg of ['md5', 'sha1', 'sha256', 'sha512']) {
      expect(out[`${alg}:hex`]).toBe(createHash(alg).update(text).digest('hex'));
      expect(out[`${alg}:base64`]).toBe(createHash(alg).update(text).digest('base64'));
    }
    expect(out.latin1).toBe(createHash('sha256').update('abc').digest().toString('latin1'));
    expect(out.buffer).toBe(createHash('sha1').update('abc').digest('hex'));
    expect(out.hex).toBe(createHash('sha256').update('abc').digest('hex'));
    expect(out.copy).toBe(createHash('sha256').update('abc').digest('hex'));
    expect(out.orig).toBe(createHash('sha256').update('ab').digest('hex'));
    expect(out.twice).toBe('Digest already called');
    expect(out.unknown).toMatch(/Digest method not supported/);
  });

  it('computes HMACs and RSA signatures as Node does, and compares in constant time', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const { output: out } = await output(
      action(`
        const { createHmac, createSign, timingSafeEqual } = require('node:crypto');
        const a = Buffer.from('same'), b = Buffer.from('same'), c = Buffer.from('diff');
        let mismatch;
        try { timingSafeEqual(a, Buffer.from('longer')); } catch (e) { mismatch = e.message; }
        return {
          sha256: createHmac('sha256', 'secret').update(input.text).digest('hex'),
          sha1: createHmac('sha1', Buffer.from('k3y')).update('a').update('b').digest('base64'),
          sha512: createHmac('sha512', 'secret').update('x').digest('hex'),
          signature: createSign('RSA-SHA256').update('payload').sign(input.pem, 'base64'),
          equal: timingSafeEqual(a, b),
          unequal: timingSafeEqual(a, c),
          mismatch,
        };`),
      { text, pem },
    );
    expect(out.sha256).toBe(createHmac('sha256', 'secret').update(text).digest('hex'));
    expect(out.sha1).toBe(createHmac('sha1', 'k3y').update('ab').digest('base64'));
    expect(out.sha512).toBe(createHmac('sha512', 'secret').update('x').digest('hex'));
    expect(
      createVerify('RSA-SHA256')
        .update('payload')
        .verify(publicKey, out.signature as string, 'base64'),
    ).toBe(true);
    expect(out.signature).toBe(createSign('RSA-SHA256').update('payload').sign(pem, 'base64'));
    expect(out).toMatchObject({
      equal: true,
      unequal: false,
      mismatch: 'Input buffers must have the same byte length',
    });
  });

  it('gives random bytes and UUIDs from the host (require and the global crypto)', async () => {
    const { output: out } = await output(
      action(`
        const crypto = require('crypto');
        const values = globalThis.crypto.getRandomValues(new Uint32Array(8));
        return {
          uuid: crypto.randomUUID(),
          globalUuid: globalThis.crypto.randomUUID(),
          bytes: crypto.randomBytes(32).toString('hex'),
          more: crypto.randomBytes(32).toString('hex'),
          values: Array.from(values),
          int: crypto.randomInt(10, 20),
        };`),
    );
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
    expect(out.uuid).toMatch(uuid);
    expect(out.globalUuid).toMatch(uuid);
    expect(out.uuid).not.toBe(out.globalUuid);
    expect(out.bytes).toMatch(/^[0-9a-f]{64}$/);
    expect(out.bytes).not.toBe(out.more);
    expect(new Set(out.values as number[]).size).toBeGreaterThan(1);
    expect(out.int).toBeGreaterThanOrEqual(10);
    expect(out.int).toBeLessThan(20);
  });
});

describe("require('unzipper')", () => {
  it('opens a zip buffer and reads each file as unzipper does', async () => {
    const zip = zipSync({
      'report.csv': new TextEncoder().encode('id,name\n1,Ada\n'),
      'nested/notes.txt': [new TextEncoder().encode('deflated '.repeat(100)), { level: 9 }],
      'empty/': new Uint8Array(0),
    });
    const { output: out } = await output(
      action(`
        const unzipper = require('unzipper');
        const directory = await unzipper.Open.buffer(Buffer.from(input.zip, 'base64'));
        const files = [];
        for (const file of directory.files) {
          files.push({ path: file.path, type: file.type, size: file.uncompressedSize, text: (await file.buffer()).toString('utf8') });
        }
        return { files };`),
      { zip: Buffer.from(zip).toString('base64') },
    );
    expect(out.files).toEqual([
      { path: 'report.csv', type: 'File', size: 14, text: 'id,name\n1,Ada\n' },
      { path: 'nested/notes.txt', type: 'File', size: 900, text: 'deflated '.repeat(100) },
      { path: 'empty/', type: 'Directory', size: 0, text: '' },
    ]);
  });

  it('refuses other modules by name', async () => {
    const result = await runInSandbox(request(action(`require('fs'); return {};`), {}));
    expect(result).toMatchObject({
      status: 'failure',
      error: { message: expect.stringContaining('Cannot find module "fs"') },
    });
  });
});

describe("require('botbuilder')", () => {
  // Each call builds the same value in the sandbox and with the real botbuilder 4.23.3 (Nango's runner's),
  // whose outputs are compared as the JSON a script would send.
  const calls = `[
    ['text', b.MessageFactory.text('hello')],
    ['textSpeak', b.MessageFactory.text('hello', 'say hello', b.InputHints.ExpectingInput)],
    ['suggested', b.MessageFactory.suggestedActions(['red', { type: 'postBack', title: 'Blue', value: 'b' }], 'pick')],
    ['adaptive', b.MessageFactory.attachment(b.CardFactory.adaptiveCard({ type: 'AdaptiveCard', version: '1.4', body: [{ type: 'TextBlock', text: 'Hi' }] }), 'fallback')],
    ['hero', b.CardFactory.heroCard('Title', 'Text', ['https://img.example/a.png'], ['ok', { type: 'openUrl', title: 'Open', value: 'https://x.example' }], { subtitle: 'Sub' })],
    ['heroNoText', b.CardFactory.heroCard('Title', ['https://img.example/a.png'], ['ok'])],
    ['thumbnail', b.CardFactory.thumbnailCard('T', 'x', [{ url: 'https://img.example/b.png', alt: 'b' }])],
    ['video', b.CardFactory.videoCard('V', ['https://v.example/1.mp4'], ['play'], { autoloop: true })],
    ['audio', b.CardFactory.audioCard('A', [{ url: 'https://a.example/1.mp3' }])],
    ['animation', b.CardFactory.animationCard('G', ['https://g.example/1.gif'])],
    ['receipt', b.CardFactory.receiptCard({ title: 'R', total: '$1' })],
    ['o365', b.CardFactory.o365ConnectorCard({ title: 'O', sections: [] })],
    ['signin', b.CardFactory.signinCard('Sign in', 'https://login.example', 'please')],
    ['oauth', b.CardFactory.oauthCard('conn', 'Sign in', 'text')],
    ['carousel', b.MessageFactory.carousel([b.CardFactory.heroCard('1'), b.CardFactory.heroCard('2')], 'many', 'spoken')],
    ['list', b.MessageFactory.list([b.CardFactory.heroCard('1')])],
    ['contentUrl', b.MessageFactory.contentUrl('https://f.example/a.pdf', 'application/pdf', 'a.pdf', 'file')],
    ['types', [b.ActivityTypes, b.InputHints, b.ActionTypes, b.AttachmentLayoutTypes, b.TextFormatTypes, b.ActivityImportance, b.DeliveryModes, b.EndOfConversationCodes, b.RoleTypes, b.MessageReactionTypes, b.CardFactory.contentTypes]],
    ['reference', b.TurnContext.getConversationReference({ type: 'message', id: 'a1', channelId: 'msteams', serviceUrl: 'https://smba.example', locale: 'en', from: { id: 'u' }, recipient: { id: 'bot' }, conversation: { id: 'c' } })],
    ['applied', b.TurnContext.applyConversationReference({ type: 'message', text: 'x' }, { activityId: 'a1', channelId: 'msteams', serviceUrl: 'https://smba.example', user: { id: 'u' }, bot: { id: 'bot' }, conversation: { id: 'c' } })],
    ['mention', b.TurnContext.removeRecipientMention({ text: '<at>Bot</at> hi', recipient: { id: 'bot' }, entities: [{ type: 'mention', text: '<at>Bot</at>', mentioned: { id: 'bot' } }] })],
  ]`;

  it('builds messages, cards and conversation references as botbuilder 4.23.3 does', async () => {
    const { output: out } = await output(
      action(`const b = require('botbuilder'); return { values: JSON.parse(JSON.stringify(${calls})) };`),
    );
    const b = require('botbuilder') as unknown;
    const expected = new Function('b', `return ${calls};`)(b) as unknown;
    expect(out.values).toEqual(JSON.parse(JSON.stringify(expected)));
    expect((out.values as unknown[]).length).toBe(21);
  });

  it('throws a clear error naming what needs a bot server', async () => {
    const result = await runInSandbox(
      request(action(`const { CloudAdapter } = require('botbuilder'); new CloudAdapter({}); return {};`), {}),
    );
    expect(result).toMatchObject({
      status: 'failure',
      error: {
        message: expect.stringContaining(
          "botbuilder's CloudAdapter is not available in Switchboard functions",
        ),
      },
    });
    const handler = await runInSandbox(
      request(
        action(
          `const b = require('botbuilder'); class Bot extends b.TeamsActivityHandler {} new Bot(); return {};`,
        ),
        {},
      ),
    );
    expect(handler).toMatchObject({
      status: 'failure',
      error: { message: expect.stringContaining("botbuilder's TeamsActivityHandler is not available") },
    });
  });
});

describe('setLogger and getFlowAttributes', () => {
  it('drops log lines under the level set, and gives the deployed attributes', async () => {
    const { output: out, logs } = await output(
      action(`
        console.log('kept 1');
        nango.setLogger({ level: 'warn' });
        await nango.log('dropped');
        console.warn('kept 2');
        nango.setLogger({ level: 'off' });
        console.error('dropped too');
        return { attributes: nango.getFlowAttributes() };`),
      {},
      { attributes: { region: 'eu', limit: 3 } },
    );
    expect(logs.map((l) => l.message)).toEqual(['kept 1', 'kept 2']);
    expect(out.attributes).toEqual({ region: 'eu', limit: 3 });
    const none = await output(action(`return { attributes: nango.getFlowAttributes() };`));
    expect(none.output.attributes).toBeNull();
  });
});

describe('URL in a ready context', () => {
  beforeAll(() => configurePool(4));
  afterAll(() => configurePool(0));

  it('is the constructor in the next run of a pooled isolate too (its part evaluated ahead)', async () => {
    const code = action(`return { href: new URL(input.url).href, isReady: typeof URL };`);
    const results = [];
    for (const url of ['https://a.example/x', 'https://b.example/y', 'https://c.example/z']) {
      const result = await runInSandbox(request(code, { url }, { poolKey: 'ready-url' }));
      results.push({
        readyContext: result.readyContext,
        output: result.status === 'success' ? JSON.parse(result.outputJson ?? 'null') : result.error,
      });
    }
    expect(results.map((r) => r.output)).toEqual([
      { href: 'https://a.example/x', isReady: 'function' },
      { href: 'https://b.example/y', isReady: 'function' },
      { href: 'https://c.example/z', isReady: 'function' },
    ]);
    expect(results.some((r) => r.readyContext)).toBe(true);
  });
});
