import {
  Badge,
  Button,
  Code,
  Group,
  JsonInput,
  Modal,
  NativeSelect,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import type { ActionRunsPage, RunLogsResponse } from '@switchboard/contracts';
import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useState, type FormEvent } from 'react';
import { api, ApiError, request } from '../api/client';
import { useEnvMutation, useEnvQuery } from '../api/hooks';
import { useSession } from '../api/session';
import { ErrorAlert, TraceLink } from '../components/error-alert';
import { MutationError } from '../components/mutation-feedback';
import { Page } from '../components/page';
import { PagedTable } from '../components/paged-table';
import { useCursorPages } from '../components/pager';
import { QueryState } from '../components/query-state';

/** One integration's entry of `GET /scripts/config` (Nango's `StandardNangoConfig`), as much as shown here. */
interface ScriptConfig {
  name: string;
  type: 'sync' | 'action' | 'on-event';
  version?: string | null;
  last_deployed?: string | null;
  enabled?: boolean;
  runs?: string | null;
  returns: string[];
}
interface IntegrationScripts {
  providerConfigKey: string;
  syncs: ScriptConfig[];
  actions: ScriptConfig[];
  'on-events': ScriptConfig[];
}

interface Selected {
  integration: string;
  fn: ScriptConfig;
}

export function FunctionsPage() {
  const config = useEnvQuery(['functions', 'config'], () => api<IntegrationScripts[]>('/scripts/config'));
  const [selected, setSelected] = useState<Selected | null>(null);
  // Runs whose logs are open: a run started here opens at once; a row's button opens or closes one.
  const [opened, setOpened] = useState<string[]>([]);
  const open = (id: string) => setOpened((r) => [id, ...r.filter((x) => x !== id)]);
  const toggle = (id: string) => setOpened((r) => (r.includes(id) ? r.filter((x) => x !== id) : [id, ...r]));
  const rows = (config.data ?? []).flatMap((entry) =>
    [...entry.syncs, ...entry.actions, ...entry['on-events']].map((fn) => ({
      integration: entry.providerConfigKey,
      fn,
    })),
  );
  return (
    <Page title="Functions">
      <QueryState
        query={config}
        label="functions"
        empty="No function deployed in this environment."
        isEmpty={() => rows.length === 0}
      >
        {() => (
          <Table striped aria-label="Deployed functions">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Function</Table.Th>
                <Table.Th>Type</Table.Th>
                <Table.Th>Integration</Table.Th>
                <Table.Th>Version</Table.Th>
                <Table.Th>Last deployed</Table.Th>
                <Table.Th>Details</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rows.map(({ integration, fn }) => (
                <Table.Tr key={`${integration}-${fn.type}-${fn.name}`} data-testid={`function-${fn.name}`}>
                  <Table.Td>{fn.name}</Table.Td>
                  <Table.Td>
                    <Badge>{fn.type}</Badge>
                  </Table.Td>
                  <Table.Td>{integration}</Table.Td>
                  <Table.Td>{fn.version ?? '—'}</Table.Td>
                  <Table.Td>{fn.last_deployed ? new Date(fn.last_deployed).toLocaleString() : '—'}</Table.Td>
                  <Table.Td>
                    <Button
                      size="compact-xs"
                      variant="default"
                      onClick={() => setSelected({ integration, fn })}
                      aria-label={`Open ${fn.name}`}
                    >
                      Open
                    </Button>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
      </QueryState>
      <ActionRuns opened={opened} onToggle={toggle} />
      <Modal
        closeButtonProps={{ 'aria-label': 'Close' }}
        opened={selected !== null}
        onClose={() => setSelected(null)}
        title={selected?.fn.name ?? ''}
        size="xl"
      >
        {selected && <FunctionDetail selected={selected} onRun={open} />}
      </Modal>
    </Page>
  );
}

function FunctionDetail({ selected, onRun }: { selected: Selected; onRun(id: string): void }) {
  const { can } = useSession();
  const { integration, fn } = selected;
  const code = useEnvQuery(['functions', 'code', integration, fn.type, fn.name], () =>
    api<{ code: string }>(
      `/integrations/${encodeURIComponent(integration)}/functions/${encodeURIComponent(fn.name)}/code`,
      {
        query: { type: fn.type },
      },
    ),
  );
  return (
    <Stack>
      <Text size="sm">
        {fn.type} of {integration}
        {fn.runs ? `, runs ${fn.runs}` : ''}
        {fn.returns.length ? `, returns ${fn.returns.join(', ')}` : ''}
      </Text>
      {fn.type === 'action' && can('environment:actions:trigger') && (
        <RunAction integration={integration} name={fn.name} onRun={onRun} />
      )}
      <Title order={3} size="h5">
        Code
      </Title>
      <QueryState query={code} label="the code" empty="">
        {(data) => (
          <Code block tabIndex={0} mah={360} style={{ overflow: 'auto' }} data-testid="function-code">
            {data.code}
          </Code>
        )}
      </QueryState>
    </Stack>
  );
}

function RunAction({
  integration,
  name,
  onRun,
}: {
  integration: string;
  name: string;
  onRun(id: string): void;
}) {
  const [connectionId, setConnectionId] = useState('');
  const [input, setInput] = useState('{}');
  const [invalid, setInvalid] = useState<string | null>(null);
  const run = useEnvMutation(async (parsed: unknown) => {
    try {
      const answer = await request<unknown>('/action/trigger', {
        method: 'POST',
        headers: { 'Connection-Id': connectionId, 'Provider-Config-Key': integration },
        body: { action_name: name, input: parsed },
      });
      const runId = answer.headers.get('x-switchboard-run-id');
      if (runId) onRun(runId);
      return { output: answer.data, runId, traceId: answer.traceId };
    } catch (error) {
      const runId = error instanceof ApiError ? (error.headers?.get('x-switchboard-run-id') ?? null) : null;
      if (runId) onRun(runId);
      throw error;
    }
  }, []);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    try {
      const parsed: unknown = input.trim() ? JSON.parse(input) : undefined;
      setInvalid(null);
      run.mutate(parsed);
    } catch (error) {
      setInvalid(error instanceof Error ? error.message : 'Not JSON');
    }
  };
  return (
    <form onSubmit={submit} aria-label={`Run ${name}`}>
      <Stack gap="xs">
        <Title order={3} size="h5">
          Run this action
        </Title>
        <TextInput
          label="Connection id"
          required
          value={connectionId}
          onChange={(e) => setConnectionId(e.currentTarget.value)}
        />
        <JsonInput
          label="Input (JSON)"
          value={input}
          onChange={setInput}
          autosize
          minRows={2}
          error={invalid}
        />
        <Group>
          <Button type="submit" loading={run.isPending}>
            Run action
          </Button>
        </Group>
        <MutationError mutation={run} title="The action failed" />
        {run.data && (
          <Stack gap={4}>
            <Text size="sm">Output{run.data.runId ? ` of run ${run.data.runId}` : ''}:</Text>
            <Code block data-testid="action-output">
              {JSON.stringify(run.data.output, null, 2)}
            </Code>
            <TraceLink traceId={run.data.traceId} />
          </Stack>
        )}
      </Stack>
    </form>
  );
}

const RUN_STATUSES = ['', 'running', 'succeeded', 'failed'];
const statusColor = (status: string) =>
  status === 'failed' ? 'red.9' : status === 'succeeded' ? 'teal.9' : 'gray.7';

/**
 * The environment's action runs from `GET /functions/runs` (every run, however it was started), newest
 * first and filtered on the server; a row opens that run's logs. Runs started on this page open by
 * themselves.
 */
function ActionRuns({ opened, onToggle }: { opened: string[]; onToggle(id: string): void }) {
  const [integration, setIntegration] = useState('');
  const [action, setAction] = useState('');
  const [status, setStatus] = useState('');
  const [id, setId] = useState('');
  const { page, cursor, reset, go } = useCursorPages<string>();
  const runs = useEnvQuery(
    ['action-runs', integration, action, status, cursor],
    () =>
      api<ActionRunsPage>('/functions/runs', {
        query: { limit: 20, cursor, integration: integration.trim(), action: action.trim(), status },
      }),
    {
      refetchInterval: (query) => (query.state.data?.data.some((r) => r.status === 'running') ? 2000 : false),
    },
  );
  const filter = (set: (value: string) => void) => (e: { currentTarget: { value: string } }) => {
    set(e.currentTarget.value);
    reset();
  };
  return (
    <Stack gap="xs">
      <Title order={2} size="h4">
        Action runs
      </Title>
      <Group align="end">
        <TextInput label="Integration" value={integration} onChange={filter(setIntegration)} />
        <TextInput label="Action" value={action} onChange={filter(setAction)} />
        <NativeSelect
          label="Status"
          data={RUN_STATUSES.map((v) => ({ value: v, label: v || 'any' }))}
          value={status}
          onChange={filter(setStatus)}
        />
        <form
          onSubmit={(e) => {
            e.preventDefault();
            if (id.trim()) onToggle(id.trim());
          }}
        >
          <Group align="end">
            <TextInput
              label="Run id"
              description="From the X-Switchboard-Run-Id header"
              value={id}
              onChange={(e) => setId(e.currentTarget.value)}
            />
            <Button type="submit" variant="default">
              Show run
            </Button>
          </Group>
        </form>
      </Group>
      <PagedTable
        query={runs}
        label="action runs"
        empty="No action run matches."
        caption="Action runs"
        headers={['Started', 'Action', 'Integration', 'Connection', 'Outcome', 'Attempts', 'Logs']}
        pages={{ page, go }}
        row={(run) => (
          <Table.Tr key={run.id} data-testid="action-run-row">
            <Table.Td>{new Date(run.created_at).toLocaleString()}</Table.Td>
            <Table.Td>{run.action}</Table.Td>
            <Table.Td>{run.integration}</Table.Td>
            <Table.Td>{run.connection_id}</Table.Td>
            <Table.Td>
              <Badge color={statusColor(run.status)}>{run.status}</Badge>
              {run.error && (
                <Text size="xs">
                  {run.error.code}: {run.error.message}
                </Text>
              )}
            </Table.Td>
            <Table.Td>{run.attempts}</Table.Td>
            <Table.Td>
              <Button
                size="compact-xs"
                variant="default"
                aria-expanded={opened.includes(run.id)}
                aria-label={`${opened.includes(run.id) ? 'Hide logs' : 'Logs'} of run ${run.id}`}
                onClick={() => onToggle(run.id)}
              >
                {opened.includes(run.id) ? 'Hide logs' : 'Logs'}
              </Button>
            </Table.Td>
          </Table.Tr>
        )}
      />
      {opened.map((runId) => (
        <RunLogs key={runId} runId={runId} />
      ))}
    </Stack>
  );
}

function RunLogs({ runId }: { runId: string }) {
  const client = useQueryClient();
  const { environment } = useSession();
  const logs = useEnvQuery(
    ['runs', runId],
    () => api<RunLogsResponse>(`/functions/runs/${encodeURIComponent(runId)}/logs`),
    {
      refetchInterval: (query) => (query.state.data?.data.status === 'running' ? 1500 : false),
    },
  );
  // Once the run is stored (a synchronous action answers before its row is written), and whenever its
  // status changes, the list reads it again.
  const status = logs.data?.data.status;
  useEffect(() => {
    if (status) void client.invalidateQueries({ queryKey: [environment, 'action-runs'] });
  }, [client, environment, status]);
  if (logs.isError) return <ErrorAlert error={logs.error} title={`Run ${runId}`} />;
  if (!logs.data) return <Text size="sm">Loading run {runId}…</Text>;
  const run = logs.data.data;
  return (
    <Stack gap={4} data-testid="action-run">
      <Group gap="xs">
        <Text size="sm" fw={600}>
          {run.function}
        </Text>
        <Badge color={statusColor(run.status)}>{run.status}</Badge>
        <Text size="xs" c="dimmed">
          run {run.id}, {run.attempts} attempt(s), started {new Date(run.created_at).toLocaleString()}
        </Text>
      </Group>
      {run.logs.length === 0 ? (
        <Text size="xs" c="dimmed">
          No log line.
        </Text>
      ) : (
        <Code block>{run.logs.map((l) => `${l.at} [${l.level}] ${l.message}`).join('\n')}</Code>
      )}
    </Stack>
  );
}
