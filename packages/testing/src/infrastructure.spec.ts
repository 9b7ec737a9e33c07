import { resolveTestInfrastructure } from './infrastructure';

describe('test infrastructure resolution', () => {
  it('uses the services named by the TEST_* variables', async () => {
    const infra = await resolveTestInfrastructure({
      TEST_DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/x',
      TEST_NATS_URL: 'nats://127.0.0.1:4222',
      TEST_TEMPORAL_ADDRESS: '127.0.0.1:7233',
      TEST_REDIS_URL: 'redis://127.0.0.1:6379/1',
    });
    expect(infra).toMatchObject({
      source: 'environment',
      natsUrl: 'nats://127.0.0.1:4222',
      temporalAddress: '127.0.0.1:7233',
    });
  });

  it('fails fast with a message saying what to do when neither variables nor Docker exist', async () => {
    const started = Date.now();
    const attempt = resolveTestInfrastructure({
      TEST_NATS_URL: 'nats://127.0.0.1:4222',
      // A socket path that cannot exist, so the Docker probe fails the way it does on our machines.
      DOCKER_HOST: 'unix:///nonexistent/docker.sock',
    });
    await expect(attempt).rejects.toThrow(
      /No test infrastructure: TEST_DATABASE_URL, TEST_TEMPORAL_ADDRESS, TEST_REDIS_URL not set and no Docker engine is reachable\. Run the suite with `npm test`/,
    );
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
