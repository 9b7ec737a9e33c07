import { Buffer, botbuilderPart, part, zod } from './context';
import { bytesOf, crypto } from './crypto';
import { responseOf } from './fetch-response';
import { call } from './host-calls';
import type { ScriptValue } from './isolate';

/** The modules a bundle may require: Nango's allow-list (FUNCTION_MODULES in contracts). */

// ---- unzipper (what scripts use of it: Open.buffer, then each entry's buffer()) ---------------------------
let unzipperModule: ScriptValue;
const unzipper = (): ScriptValue => {
  if (unzipperModule) return unzipperModule;
  const fflate = () => part('fflate');
  const open = async (data: unknown) => {
    const zip = bytesOf(data, undefined, 'buffer');
    const files: unknown[] = [];
    // A first pass lists the entries without inflating any (the filter refuses each one).
    fflate().unzipSync(zip, {
      filter: (file: { name: string; size: number; originalSize: number }) => {
        const isDir = file.name.endsWith('/');
        files.push({
          path: file.name,
          type: isDir ? 'Directory' : 'File',
          compressedSize: file.size,
          uncompressedSize: file.originalSize,
          buffer: async () => {
            const out = fflate().unzipSync(zip, { filter: (f: { name: string }) => f.name === file.name });
            const bytes = out[file.name];
            return Buffer().from(bytes ? bytes : new Uint8Array(0));
          },
        });
        return false;
      },
    });
    return { files };
  };
  unzipperModule = { Open: { buffer: open } };
  return unzipperModule;
};

// ---- soap (sandbox-lib/soap.js): WSDL and calls through uncontrolledFetch, so the egress policy applies ----
let soapModule: ScriptValue;
const soap = (): ScriptValue => {
  if (soapModule) return soapModule;
  soapModule = part('soap')({
    fetch: async (url: string, options: ScriptValue) =>
      responseOf(
        await call('uncontrolledFetch', {
          url,
          method: options.method,
          headers: options.headers,
          body: options.body,
        }),
        (base64) => Buffer().from(base64, 'base64'),
      ),
    base64: (text: unknown) => Buffer().from(String(text), 'utf8').toString('base64'),
    nonce: () => crypto().randomBytes(16).toString('base64'),
    passwordDigest: (nonce: string, created: string, password: string) =>
      crypto()
        .createHash('sha1')
        .update(Buffer().concat([Buffer().from(nonce, 'base64'), Buffer().from(created + password, 'utf8')]))
        .digest('base64'),
  });
  return soapModule;
};

// ---- botbuilder (sandbox-lib/botbuilder.js): message and card builders; one module object per run --------
let botbuilderModule: ScriptValue;
const botbuilder = (): ScriptValue => {
  if (!botbuilderModule) botbuilderModule = botbuilderPart()();
  return botbuilderModule;
};

export const requireModule = (name: string): ScriptValue => {
  if (name === 'zod') return zod();
  if (name === 'url' || name === 'node:url') {
    return { URL: part('URL'), URLSearchParams: part('URLSearchParams') };
  }
  if (name === 'crypto' || name === 'node:crypto') return crypto();
  if (name === 'unzipper') return unzipper();
  if (name === 'soap') return soap();
  if (name === 'botbuilder') return botbuilder();
  throw new Error(
    'Cannot find module "' +
      name +
      '": functions may require only zod, url, crypto, unzipper, soap and botbuilder',
  );
};
