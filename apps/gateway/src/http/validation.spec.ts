import { Body, Controller, Get, Param, Post, Query, type INestApplication } from '@nestjs/common';
import { APP_FILTER, APP_PIPE, NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Module } from '@nestjs/common';
import { connectionHeadersSchema } from '@switchboard/contracts';
import { createZodDto } from 'nestjs-zod';
import { z } from 'zod';
import { ErrorsFilter } from './errors.filter';
import { ContractPipe, NoQuery, RequestHeaders } from './validation';

class ItemParams extends createZodDto(z.object({ id: z.coerce.number().int().positive() })) {}
class ItemBody extends createZodDto(z.strictObject({ name: z.string().min(1) })) {}
class ItemHeaders extends createZodDto(connectionHeadersSchema) {}
class ListQuery extends createZodDto(z.object({ limit: z.coerce.number().int().max(100).default(10) })) {}

@Controller('items')
class ItemsController {
  @Get()
  list(@Query() query: ListQuery): unknown {
    return query;
  }

  @Post(':id')
  update(
    @RequestHeaders() headers: ItemHeaders,
    @Body() body: ItemBody,
    @Query() _query: NoQuery,
    @Param() params: ItemParams,
  ): unknown {
    return { params, body, headers };
  }
}

@Module({
  controllers: [ItemsController],
  providers: [
    { provide: APP_FILTER, useClass: ErrorsFilter },
    { provide: APP_PIPE, useClass: ContractPipe },
  ],
})
class ItemsModule {}

const headers = {
  'content-type': 'application/json',
  'connection-id': 'c1',
  'provider-config-key': 'github',
};

describe('ContractPipe', () => {
  let app: INestApplication;
  let base: string;

  beforeAll(async () => {
    app = await NestFactory.create(ItemsModule, new FastifyAdapter(), { logger: false });
    await app.listen(0, '127.0.0.1');
    base = await app.getUrl();
  });
  afterAll(() => app.close());

  const post = (path: string, body: unknown, extra: Record<string, string> = headers) =>
    fetch(`${base}${path}`, { method: 'POST', headers: extra, body: JSON.stringify(body) });

  it('hands the handler parsed, typed inputs (defaults and coercions applied, other headers dropped)', async () => {
    const res = await post('/items/7', { name: 'a' });
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({
      params: { id: 7 },
      body: { name: 'a' },
      headers: { 'connection-id': 'c1', 'provider-config-key': 'github' },
    });
    expect(await (await fetch(`${base}/items`)).json()).toEqual({ limit: 10 });
  });

  it('answers each invalid input with 400 and its code, naming the fields', async () => {
    const cases: [Promise<Response>, string, string, (string | number)[]][] = [
      [post('/items/7', { name: '' }), 'invalid_body', 'Invalid body', ['name']],
      [post('/items/x', { name: 'a' }), 'invalid_uri_params', 'Invalid path parameters', ['id']],
      [post('/items/7?page=2', { name: 'a' }), 'invalid_query_params', 'Invalid query parameters', ['page']],
      [fetch(`${base}/items?limit=500`), 'invalid_query_params', 'Invalid query parameters', ['limit']],
      [
        post('/items/7', { name: 'a' }, { 'content-type': 'application/json', 'connection-id': 'c1' }),
        'invalid_headers',
        'Invalid headers',
        ['provider-config-key'],
      ],
    ];
    for (const [pending, code, message, path] of cases) {
      const res = await pending;
      expect(res.status).toBe(400);
      const body = (await res.json()) as {
        error: { code: string; message: string; errors: { path: unknown }[] };
      };
      expect(body.error).toMatchObject({ code, message });
      expect(body.error.errors.map((e) => e.path)).toEqual([path]);
    }
  });

  it('refuses a missing body as an invalid body', async () => {
    const res = await fetch(`${base}/items/7`, { method: 'POST', headers: { 'connection-id': 'c1' } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_body');
  });

  it('reports the path first, then the query, the body and the headers, whatever else is wrong', async () => {
    const codeOf = async (res: Promise<Response>) =>
      ((await (await res).json()) as { error: { code: string } }).error.code;
    const noHeaders = { 'content-type': 'application/json' };
    expect(await codeOf(post('/items/x?page=2', {}, noHeaders))).toBe('invalid_uri_params');
    expect(await codeOf(post('/items/7?page=2', {}, noHeaders))).toBe('invalid_query_params');
    expect(await codeOf(post('/items/7', {}, noHeaders))).toBe('invalid_body');
  });
});
