// The Helm chart, checked offline: `helm lint`, `helm template` over the default, development and
// production-like values, every rendered object decoded strictly into the Kubernetes API's Go types
// (../validate), and the properties an operator relies on (non-root, read-only root filesystem, probes,
// hooks, network policies, secrets kept out of ConfigMaps).
//
// helm and the validator are built once by `scripts/setup.sh` (ensure_helm, ensure_helm_validator in
// scripts/lib/common.sh); run alone, this file builds the validator itself when it is missing.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { KUBE, chart, helm, helmVersion, root, run, validatorBin } from './helm-tools.mjs';

const work = mkdtempSync(join(tmpdir(), 'switchboard-helm-'));
let validator;

/** `helm template` with the given values files and --set pairs; the objects, validated strictly. */
function render(name, valuesFiles = [], sets = []) {
  const args = ['template', 'sb', chart, '--namespace', 'switchboard', ...KUBE];
  for (const f of valuesFiles) args.push('-f', join(chart, f));
  for (const s of sets) args.push('--set', s);
  const r = run(helm, args);
  assert.equal(r.status, 0, `helm template (${name}) failed:\n${r.stderr}`);
  const manifest = join(work, `${name}.yaml`);
  const json = join(work, `${name}.json`);
  writeFileSync(manifest, r.stdout);
  const v = run(validator, ['-json', json, manifest]);
  assert.equal(
    v.status,
    0,
    `rendered objects (${name}) are not valid Kubernetes objects:\n${v.stdout}${v.stderr}`,
  );
  return { objects: JSON.parse(readFileSync(json, 'utf8')), summary: v.stdout.trim() };
}

const SERVICES = [
  'gateway',
  'auth-connect',
  'connections-vault',
  'proxy',
  'functions-runtime',
  'sync-orchestrator',
  'sync-orchestrator-worker',
  'webhook-relay',
];
const PROVIDER_CALLERS = ['gateway', 'auth-connect', 'proxy', 'webhook-relay'];
const component = (o) => o.metadata.labels?.['app.kubernetes.io/component'];
const ofKind = (objects, kind) => objects.filter((o) => o.kind === kind);
const podSpecs = (objects) =>
  objects
    .filter((o) => o.kind === 'Deployment' || o.kind === 'Job')
    .map((o) => ({ owner: o, spec: o.spec.template.spec }));

const renders = {};

before(() => {
  assert.ok(
    existsSync(helm),
    `helm ${helmVersion} is not built at ${helm}: run bash scripts/setup.sh (ensure_helm in scripts/lib/common.sh)`,
  );
  validator = validatorBin();
  renders.default = render('default');
  renders.dev = render('dev', ['values-dev.yaml']);
  renders.production = render('production', ['values-production.yaml']);
});

describe('helm chart: lint and render', () => {
  for (const [name, files] of [
    ['default', []],
    ['dev', ['values-dev.yaml']],
    ['production', ['values-production.yaml']],
  ]) {
    test(`helm lint --strict passes with the ${name} values`, () => {
      const args = ['lint', '--strict', ...KUBE, chart, ...files.flatMap((f) => ['-f', join(chart, f)])];
      const r = run(helm, args);
      assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    });

    test(`every object rendered with the ${name} values decodes strictly into its Kubernetes type`, () => {
      assert.match(renders[name].summary, /^\d+ objects, 0 invalid/);
    });
  }

  test('the validator refuses unknown fields and kinds, wrong types, bad labels and references to nothing', () => {
    const cases = {
      unknownField: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata: {}\nsurprise: true\n',
      nestedTypo:
        'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: a\nspec:\n  selector:\n    matchLabels: {a: b}\n  template:\n    metadata:\n      labels: {a: b}\n    spec:\n      containers:\n        - name: a\n          image: a\n          readinessprobe: {}\n',
      wrongType: 'apiVersion: v1\nkind: Service\nmetadata:\n  name: a\nspec:\n  ports: 80\n',
      unknownKind: 'apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: a\n',
      badLabel: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels:\n    "bad label": x\n',
      probeOnUndeclaredPort:
        'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: a\nspec:\n  selector:\n    matchLabels: {a: b}\n  template:\n    metadata:\n      labels: {a: b}\n    spec:\n      containers:\n        - name: a\n          image: a\n          readinessProbe:\n            httpGet: {path: /ready, port: http}\n',
      serviceToUndeclaredPort:
        'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: a\nspec:\n  selector:\n    matchLabels: {a: b}\n  template:\n    metadata:\n      labels: {a: b}\n    spec:\n      containers:\n        - name: a\n          image: a\n          ports: [{name: http, containerPort: 80}]\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: a\nspec:\n  selector: {a: b}\n  ports: [{port: 80, targetPort: metrics}]\n',
      serviceSelectingNothing:
        'apiVersion: v1\nkind: Service\nmetadata:\n  name: a\nspec:\n  selector: {a: c}\n  ports: [{port: 80}]\n',
      requestOverLimit:
        'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: a\nspec:\n  selector:\n    matchLabels: {a: b}\n  template:\n    metadata:\n      labels: {a: b}\n    spec:\n      containers:\n        - name: a\n          image: a\n          resources: {requests: {memory: 2Gi}, limits: {memory: 1Gi}}\n',
    };
    for (const [name, doc] of Object.entries(cases)) {
      const file = join(work, `bad-${name}.yaml`);
      writeFileSync(file, doc);
      const r = run(validator, [file]);
      assert.equal(r.status, 1, `${name} was accepted:\n${r.stdout}`);
      assert.match(r.stdout, /FAIL/);
    }
  });

  test('values.schema.json refuses a misspelt key, an unknown mode and a secret-looking setting', () => {
    for (const [set, message] of [
      ['gatway.replicaCount=3', /additional properties 'gatway' not allowed/],
      ['gateway.proxyMode=remot', /\/gateway\/proxyMode/],
      ['observability.metrics.exporter=statsd', /\/observability\/metrics\/exporter/],
      // A password has no place in values: the database URL comes from a Secret.
      ['database.url=postgresql://u:p@h/db', /additional properties 'url' not allowed/],
    ]) {
      const r = run(helm, ['template', 'sb', chart, ...KUBE, '--set', set]);
      assert.notEqual(r.status, 0, `${set} was accepted`);
      assert.match(r.stderr, message);
    }
  });

  test('a proxy-less render with remote mode or functions, or one without a database Secret, fails', () => {
    const remote = run(helm, [
      'template',
      'sb',
      chart,
      ...KUBE,
      '--set',
      'gateway.proxyMode=remote',
      '--set',
      'proxy.enabled=false',
    ]);
    assert.notEqual(remote.status, 0);
    assert.match(remote.stderr, /gateway.proxyMode=remote needs proxy.enabled/);
    const noProxy = run(helm, ['template', 'sb', chart, ...KUBE, '--set', 'proxy.enabled=false']);
    assert.notEqual(noProxy.status, 0);
    assert.match(noProxy.stderr, /functionsRuntime needs proxy.enabled/);
    const noDb = run(helm, ['template', 'sb', chart, ...KUBE, '--set', 'database.existingSecret=']);
    assert.notEqual(noDb.status, 0);
    assert.match(noDb.stderr, /database.existingSecret must name a Secret/);
  });
});

describe('helm chart: services', () => {
  test('one Deployment per service, each with its own image tag', () => {
    const { objects } = render('tags', [], ['gateway.image.tag=9.9.9', 'webhookRelay.image.tag=1.2.3']);
    const deployments = ofKind(objects, 'Deployment');
    assert.deepEqual(deployments.map(component).sort(), [...SERVICES].sort());
    const image = (c) => deployments.find((d) => component(d) === c).spec.template.spec.containers[0].image;
    assert.equal(image('gateway'), 'switchboard/gateway:9.9.9');
    assert.equal(image('webhook-relay'), 'switchboard/webhook-relay:1.2.3');
    assert.equal(image('proxy'), 'switchboard/proxy:0.1.0');
    assert.equal(image('sync-orchestrator-worker'), 'switchboard/sync-orchestrator:0.1.0');
  });

  test("the worker runs dist/worker.js with infra/node-flags.json's flags; the others keep their image's command", () => {
    const flags = JSON.parse(readFileSync(join(root, 'infra/node-flags.json'), 'utf8'));
    for (const d of ofKind(renders.default.objects, 'Deployment')) {
      const c = d.spec.template.spec.containers[0];
      if (component(d) === 'sync-orchestrator-worker') {
        assert.deepEqual(c.command, ['node', ...flags['sync-orchestrator-worker'], 'dist/worker.js']);
      } else {
        assert.equal(c.command, undefined, `${component(d)} overrides its image's CMD`);
      }
    }
  });

  test('every Switchboard container runs as non-root on a read-only root filesystem, with no privilege and no capability', () => {
    for (const name of ['default', 'dev', 'production']) {
      for (const { owner, spec } of podSpecs(renders[name].objects)) {
        const who = `${name}: ${owner.kind} ${owner.metadata.name}`;
        assert.equal(spec.securityContext?.runAsNonRoot, true, `${who}: pod runAsNonRoot`);
        assert.equal(spec.automountServiceAccountToken, false, `${who}: service account token mounted`);
        for (const c of spec.containers) {
          const sc = c.securityContext ?? {};
          assert.equal(sc.allowPrivilegeEscalation, false, `${who}/${c.name}: allowPrivilegeEscalation`);
          assert.deepEqual(sc.capabilities?.drop, ['ALL'], `${who}/${c.name}: capabilities`);
          assert.equal(
            (sc.seccompProfile ?? spec.securityContext.seccompProfile)?.type,
            'RuntimeDefault',
            `${who}/${c.name}: seccomp`,
          );
          assert.ok((sc.runAsUser ?? spec.securityContext.runAsUser) > 0, `${who}/${c.name}: a non-zero uid`);
          // The development Temporal (auto-setup) renders its configuration into its image at start.
          if (component(owner) === 'temporal') continue;
          assert.equal(sc.readOnlyRootFilesystem, true, `${who}/${c.name}: readOnlyRootFilesystem`);
          if (SERVICES.includes(component(owner)) || owner.kind === 'Job') {
            const tmp = c.volumeMounts?.find((m) => m.mountPath === '/tmp');
            assert.ok(tmp, `${who}/${c.name}: no writable /tmp`);
            assert.ok(
              spec.volumes.find((v) => v.name === tmp.name)?.emptyDir,
              `${who}: /tmp is not an emptyDir`,
            );
          }
        }
      }
    }
  });

  test('every HTTP service has startup, liveness (/health) and readiness (/ready) probes and drains before it is killed', () => {
    for (const d of ofKind(renders.production.objects, 'Deployment')) {
      const c = d.spec.template.spec.containers[0];
      const grace = d.spec.template.spec.terminationGracePeriodSeconds;
      if (component(d) === 'sync-orchestrator-worker') {
        // No HTTP server; its own shutdown: activities get 10 s (shutdownGraceTime), exit by 15 s.
        assert.equal(c.readinessProbe, undefined);
        assert.ok(grace > 15, `worker grace ${grace}s`);
        continue;
      }
      assert.equal(c.livenessProbe?.httpGet?.path, '/health', `${component(d)} liveness`);
      assert.equal(c.readinessProbe?.httpGet?.path, '/ready?scope=self', `${component(d)} readiness`);
      assert.equal(c.startupProbe?.httpGet?.path, '/health', `${component(d)} startup`);
      const sleep = Number(c.lifecycle?.preStop?.exec?.command?.[1]);
      assert.ok(sleep > 0, `${component(d)}: no preStop pause`);
      // service-kit's bootstrap exits at most 10 s after SIGTERM.
      assert.ok(grace > sleep + 10, `${component(d)}: grace ${grace}s <= preStop ${sleep}s + 10s drain`);
    }
  });

  test('the gateway believes X-Forwarded-For only where an ingress stands in front', () => {
    const trust = (name) =>
      ofKind(renders[name].objects, 'Deployment')
        .find((d) => component(d) === 'gateway')
        .spec.template.spec.containers[0].env.find((e) => e.name === 'SWITCHBOARD_TRUST_PROXY').value;
    assert.equal(trust('default'), 'false');
    assert.equal(trust('dev'), 'false');
    assert.equal(trust('production'), '1');
  });

  test('each service connects to NATS as its own user with its own password', () => {
    for (const d of ofKind(renders.default.objects, 'Deployment')) {
      const env = d.spec.template.spec.containers[0].env;
      const user = env.find((e) => e.name === 'NATS_USER')?.value;
      assert.equal(user, component(d));
      const password = env.find((e) => e.name === 'NATS_PASSWORD')?.valueFrom?.secretKeyRef;
      assert.equal(password?.key, `NATS_PASSWORD_${user.toUpperCase().replaceAll('-', '_')}`);
    }
  });

  test('an autoscaler takes a custom metric beside CPU', () => {
    const { objects } = render(
      'custom-metric',
      [],
      [
        'syncOrchestratorWorker.autoscaling.enabled=true',
        'syncOrchestratorWorker.autoscaling.metrics[0].type=External',
        'syncOrchestratorWorker.autoscaling.metrics[0].external.metric.name=temporal_task_queue_backlog',
        'syncOrchestratorWorker.autoscaling.metrics[0].external.target.type=AverageValue',
        'syncOrchestratorWorker.autoscaling.metrics[0].external.target.averageValue=10',
      ],
    );
    const [hpa] = ofKind(objects, 'HorizontalPodAutoscaler');
    assert.equal(component(hpa), 'sync-orchestrator-worker');
    assert.deepEqual(
      hpa.spec.metrics.map((m) => m.type),
      ['Resource', 'External'],
    );
    assert.equal(hpa.spec.metrics[1].external.metric.name, 'temporal_task_queue_backlog');
  });

  test('production: every service autoscales on CPU and has a disruption budget; the ingress has TLS', () => {
    const objects = renders.production.objects;
    const hpas = ofKind(objects, 'HorizontalPodAutoscaler');
    assert.deepEqual(hpas.map(component).sort(), [...SERVICES].sort());
    for (const h of hpas) {
      assert.ok(h.spec.metrics.some((m) => m.resource?.name === 'cpu'));
      assert.ok(h.spec.minReplicas >= 2);
    }
    assert.deepEqual(ofKind(objects, 'PodDisruptionBudget').map(component).sort(), [...SERVICES].sort());
    // Autoscaled Deployments leave replicas to the HPA (a rollout would otherwise reset them).
    for (const d of ofKind(objects, 'Deployment')) assert.equal(d.spec.replicas, undefined);
    const [ingress] = ofKind(objects, 'Ingress');
    assert.equal(ingress.spec.tls[0].secretName, 'switchboard-tls');
    const backends = ingress.spec.rules.map((r) => r.http.paths[0].backend.service);
    assert.deepEqual(backends, [
      { name: 'sb-switchboard-gateway', port: { name: 'http' } },
      { name: 'sb-switchboard-auth-connect', port: { name: 'connect' } },
    ]);
    assert.equal(ofKind(objects, 'ServiceMonitor').length, 1);
  });
});

describe('helm chart: secrets and migrations', () => {
  test('no Secret value appears in a ConfigMap or as a plain env value', () => {
    for (const name of ['default', 'dev']) {
      const objects = renders[name].objects;
      const secretValues = ofKind(objects, 'Secret').flatMap((s) =>
        Object.values(s.data ?? {}).map((v) => Buffer.from(v, 'base64').toString('utf8')),
      );
      assert.ok(
        secretValues.length >= 10,
        `${name}: the chart generated ${secretValues.length} secret values`,
      );
      const plain = [
        ...ofKind(objects, 'ConfigMap').flatMap((c) => Object.values(c.data ?? {})),
        ...podSpecs(objects).flatMap(({ spec }) =>
          spec.containers.flatMap((c) => (c.env ?? []).map((e) => e.value ?? '')),
        ),
      ].join('\n');
      for (const value of secretValues) {
        assert.ok(!plain.includes(value), `${name}: a secret value is in a ConfigMap or env value`);
      }
      for (const { spec } of podSpecs(objects)) {
        for (const c of spec.containers) {
          for (const e of c.env ?? []) {
            if (/PASSWORD|MASTER_KEYS|TOKEN|SECRET_KEY|DATABASE_URL|PWD/.test(e.name)) {
              assert.ok(e.valueFrom?.secretKeyRef, `${c.name}: ${e.name} is not read from a Secret`);
            }
          }
        }
      }
    }
  });

  test('production names existing Secrets and generates none; the generated ones are kept on uninstall', () => {
    assert.deepEqual(ofKind(renders.production.objects, 'Secret'), []);
    const refs = new Set(
      podSpecs(renders.production.objects).flatMap(({ spec }) =>
        spec.containers.flatMap((c) =>
          (c.env ?? []).map((e) => e.valueFrom?.secretKeyRef?.name).filter(Boolean),
        ),
      ),
    );
    assert.deepEqual([...refs].sort(), [
      'switchboard-db-app',
      'switchboard-keys',
      'switchboard-nats',
      'switchboard-redis',
    ]);
    for (const s of ofKind(renders.default.objects, 'Secret')) {
      assert.equal(s.metadata.annotations?.['helm.sh/resource-policy'], 'keep', s.metadata.name);
    }
  });

  test('the console: OIDC only with an issuer, its client secret from a Secret key; no secret in values', () => {
    const envOf = (objects, name) =>
      Object.fromEntries(
        ofKind(objects, 'Deployment')
          .find((d) => component(d) === name)
          .spec.template.spec.containers[0].env.map((e) => [e.name, e.value ?? e.valueFrom]),
      );
    const plain = envOf(renders.default.objects, 'auth-connect');
    assert.equal(plain.SWITCHBOARD_CONSOLE_IDLE_TIMEOUT_S, '43200');
    assert.equal(plain.SWITCHBOARD_CONSOLE_SESSION_MAX_AGE_S, '604800');
    assert.equal(plain.SWITCHBOARD_CONSOLE_OIDC_ISSUER, undefined);
    const gateway = envOf(renders.default.objects, 'gateway');
    assert.equal(gateway.SWITCHBOARD_CONSOLE_SIGN_IN_PER_IP_PER_MIN, '30');
    assert.equal(gateway.SWITCHBOARD_CONSOLE_TRACE_URL, undefined);

    const oidc = render(
      'console-oidc',
      [],
      [
        'console.oidc.issuer=https://login.example.com',
        'console.oidc.clientId=switchboard-console',
        'console.oidc.clientSecret.existingSecret=console-oidc',
        'console.traceUrl=https://jaeger.example.com/trace/{trace_id}',
      ],
    );
    const env = envOf(oidc.objects, 'auth-connect');
    assert.equal(env.SWITCHBOARD_CONSOLE_OIDC_ISSUER, 'https://login.example.com');
    assert.equal(env.SWITCHBOARD_CONSOLE_OIDC_CLIENT_ID, 'switchboard-console');
    assert.equal(env.SWITCHBOARD_CONSOLE_OIDC_LABEL, 'Sign in with SSO');
    assert.deepEqual(env.SWITCHBOARD_CONSOLE_OIDC_CLIENT_SECRET, {
      secretKeyRef: { name: 'console-oidc', key: 'SWITCHBOARD_CONSOLE_OIDC_CLIENT_SECRET' },
    });
    assert.equal(
      envOf(oidc.objects, 'gateway').SWITCHBOARD_CONSOLE_TRACE_URL,
      'https://jaeger.example.com/trace/{trace_id}',
    );

    for (const [sets, message] of [
      [['console.oidc.clientSecret.value=s3cret'], /additional properties 'value' not allowed/],
      [
        ['console.oidc.issuer=http://login.example.com', 'console.oidc.clientId=a'],
        /\/console\/oidc\/issuer/,
      ],
      [['console.oidc.issuer=https://login.example.com'], /console.oidc.clientId is required/],
      [['console.traceUrl=https://jaeger.example.com/trace'], /\/console\/traceUrl/],
    ]) {
      const r = run(helm, ['template', 'sb', chart, ...KUBE, ...sets.flatMap((x) => ['--set', x])]);
      assert.notEqual(r.status, 0, `${sets.join(' ')} was accepted`);
      assert.match(r.stderr, message);
    }
  });

  test('migrations run as a Job before install and upgrade, never in a service', () => {
    for (const name of ['default', 'production']) {
      const jobs = ofKind(renders[name].objects, 'Job');
      const migrate = jobs.find((j) => component(j) === 'migrations');
      assert.ok(migrate, `${name}: no migration Job`);
      assert.deepEqual(migrate.metadata.annotations['helm.sh/hook'].split(',').sort(), [
        'pre-install',
        'pre-upgrade',
      ]);
      assert.equal(migrate.spec.template.spec.restartPolicy, 'Never');
      assert.match(migrate.spec.template.spec.containers[0].image, /(^|\/)switchboard\/migrate:0\.1\.0$/);
    }
    // The development Postgres is one of the release's objects: the Job follows it on install.
    const dev = ofKind(renders.dev.objects, 'Job').find((j) => component(j) === 'migrations');
    assert.equal(dev.metadata.annotations['helm.sh/hook'], 'post-install,pre-upgrade');
    for (const d of ofKind(renders.default.objects, 'Deployment')) {
      const c = d.spec.template.spec.containers[0];
      assert.ok(!JSON.stringify([c.command ?? [], c.args ?? []]).includes('migrate'), component(d));
    }
  });
});

describe('helm chart: network policies', () => {
  const policies = () => ofKind(renders.production.objects, 'NetworkPolicy');
  const policyOf = (name) => policies().find((p) => component(p) === name);

  test('every service and job has a policy that refuses what it does not list, both ways', () => {
    assert.deepEqual(policies().map(component).sort(), [...SERVICES, 'migrations'].sort());
    for (const p of policies()) assert.deepEqual(p.spec.policyTypes, ['Ingress', 'Egress']);
  });

  test('only the gateway and the connect page are reachable from outside the release', () => {
    for (const p of policies()) {
      const open = (p.spec.ingress ?? []).filter((rule) =>
        (rule.from ?? [{ namespaceSelector: {} }]).some(
          (peer) => peer.namespaceSelector && !peer.podSelector,
        ),
      );
      const ports = open
        .flatMap((rule) => rule.ports.map((port) => port.port))
        .filter((port) => port !== 'metrics');
      const expected = { gateway: ['http'], 'auth-connect': ['connect'] }[component(p)] ?? [];
      assert.deepEqual(ports, expected, component(p));
    }
    assert.deepEqual(
      policyOf('proxy').spec.ingress[0].from.map(
        (f) => f.podSelector.matchLabels['app.kubernetes.io/component'],
      ),
      ['gateway', 'functions-runtime'],
    );
  });

  test('only the services that call providers or customers reach the Internet, never the cluster ranges', () => {
    for (const p of policies()) {
      const blocks = p.spec.egress.flatMap((rule) =>
        (rule.to ?? []).map((peer) => peer.ipBlock).filter(Boolean),
      );
      if (PROVIDER_CALLERS.includes(component(p))) {
        assert.deepEqual(
          blocks.map((b) => b.cidr),
          ['0.0.0.0/0', '::/0'],
          component(p),
        );
        assert.ok(blocks[0].except.includes('10.0.0.0/8') && blocks[0].except.includes('169.254.0.0/16'));
      } else {
        assert.deepEqual(blocks, [], `${component(p)} may reach the Internet`);
      }
      // Every other egress rule names its destinations in production.
      for (const rule of p.spec.egress)
        assert.ok(rule.to?.length, `${component(p)}: a rule open to any address`);
    }
  });

  test('egress to Postgres, Temporal and Redis only from the services that use them', () => {
    const reaches = (p, port) => p.spec.egress.some((rule) => rule.ports?.some((x) => x.port === port));
    const withPort = (port) =>
      policies()
        .filter((p) => reaches(p, port))
        .map(component)
        .sort();
    assert.deepEqual(withPort(5432), [
      'auth-connect',
      'connections-vault',
      'migrations',
      'sync-orchestrator',
      'sync-orchestrator-worker',
      'webhook-relay',
    ]);
    assert.deepEqual(withPort(7233), ['sync-orchestrator', 'sync-orchestrator-worker']);
    assert.deepEqual(withPort(6379), ['gateway', 'proxy']);
    // The proxy keeps spent nonces in Redis, shared by its replicas: without REDIS_URL it does not start.
    for (const name of ['default', 'production']) {
      const withRedis = podSpecs(renders[name].objects)
        .filter(({ spec }) => spec.containers.some((c) => (c.env ?? []).some((e) => e.name === 'REDIS_URL')))
        .map(({ owner }) => component(owner))
        .sort();
      assert.deepEqual(withRedis, ['gateway', 'proxy'], name);
    }
    assert.deepEqual(withPort(4222), [...SERVICES].sort());
  });
});

describe('helm chart: copies kept in step', () => {
  test('files/nats.conf is infra/nats/nats.conf (pnpm nats:config writes both)', () => {
    assert.equal(
      readFileSync(join(chart, 'files/nats.conf'), 'utf8'),
      readFileSync(join(root, 'infra/nats/nats.conf'), 'utf8'),
    );
  });

  test("the dashboard ConfigMap is infra/grafana's dashboard, for the sidecar, with the chosen datasource", () => {
    const source = readFileSync(join(root, 'infra/grafana/dashboards/switchboard.json'), 'utf8');
    assert.equal(readFileSync(join(chart, 'files/dashboards/switchboard.json'), 'utf8'), source);
    const [cm] = ofKind(renders.production.objects, 'ConfigMap').filter((c) => c.data?.['switchboard.json']);
    assert.equal(cm.metadata.labels.grafana_dashboard, '1');
    const dashboard = JSON.parse(cm.data['switchboard.json']);
    assert.equal(dashboard.panels.length, JSON.parse(source).panels.length);
    assert.ok(!cm.data['switchboard.json'].includes('switchboard-prometheus'));
  });

  test('the alerts query only series the dashboard (and so the services) record', () => {
    const source = readFileSync(join(root, 'infra/grafana/dashboards/switchboard.json'), 'utf8');
    const base = (m) => m.replace(/_(bucket|count|sum)$/, '');
    const known = new Set([...source.matchAll(/\b([a-z][a-z0-9_]+)(?:\{|\[)/g)].map((m) => base(m[1])));
    const [rule] = ofKind(renders.production.objects, 'PrometheusRule');
    const exprs = rule.spec.groups.flatMap((g) => g.rules.map((r) => r.expr));
    assert.ok(exprs.length >= 5);
    for (const expr of exprs) {
      for (const [, metric] of expr.matchAll(/\b([a-z][a-z0-9_]+)(?:\{|\[)/g)) {
        if (metric.startsWith('kube_')) continue; // kube-state-metrics
        assert.ok(known.has(base(metric)), `${metric} is not a series the dashboard knows`);
      }
    }
  });

  test("the operations guide's manifests are valid Kubernetes objects too", () => {
    const dir = join(root, 'docs/operations');
    const docs = readdirSync(dir).filter((f) => f.endsWith('.md'));
    const blocks = docs.flatMap((f) =>
      [...readFileSync(join(dir, f), 'utf8').matchAll(/```yaml\n([\s\S]*?)```/g)]
        .map((m) => m[1])
        .filter((b) => /^\s*apiVersion:/m.test(b)),
    );
    assert.ok(blocks.length >= 1);
    // Placeholders such as <release> and <tag> stand for a name.
    const file = join(work, 'docs-manifests.yaml');
    writeFileSync(
      file,
      blocks.map((b) => b.replace(/^ {3}/gm, '').replace(/<[a-z-]+>/g, 'example')).join('\n---\n'),
    );
    const v = run(validator, [file]);
    assert.equal(v.status, 0, v.stdout);
  });
});
