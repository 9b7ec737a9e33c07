import { FetchHeaders, responseOf, type TextBytes } from './fetch-response';

const fromBase64 = (base64: string): TextBytes => Buffer.from(base64, 'base64');

describe('prelude fetch response', () => {
  it('reads headers by any case and joins a repeated one', () => {
    const headers = new FetchHeaders([
      ['Set-Cookie', 'a=1'],
      ['set-cookie', 'b=2'],
      ['Content-Type', 'text/plain'],
    ]);
    expect(headers.get('SET-COOKIE')).toBe('a=1, b=2');
    expect(headers.has('content-type')).toBe(true);
    expect(headers.get('x-missing')).toBeNull();
    expect([...headers]).toEqual([
      ['set-cookie', 'a=1, b=2'],
      ['content-type', 'text/plain'],
    ]);
  });

  it('gives the body once, as text, JSON or bytes', async () => {
    const reply = {
      url: 'http://127.0.0.1/x',
      status: 201,
      statusText: 'Created',
      headers: [] as [string, string][],
      bodyBase64: Buffer.from('{"ok":true}').toString('base64'),
    };
    const json = responseOf(reply, fromBase64);
    expect(json.ok).toBe(true);
    expect(json.bodyUsed).toBe(false);
    await expect(json.json()).resolves.toEqual({ ok: true });
    expect(json.bodyUsed).toBe(true);
    await expect(json.text()).rejects.toThrow('Body has already been read');

    const bytes = await responseOf(reply, fromBase64).arrayBuffer();
    expect(Buffer.from(bytes).toString()).toBe('{"ok":true}');
    expect(responseOf({ ...reply, status: 404 }, fromBase64).ok).toBe(false);
  });
});
