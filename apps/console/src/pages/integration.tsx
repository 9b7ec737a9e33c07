import {
  Badge,
  Button,
  Card,
  Code,
  CopyButton,
  Group,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import type { ApiProvider, DeployedFunction, Integration } from '@switchboard/contracts';
import { useState, type FormEvent } from 'react';
import { useNavigate, useParams } from 'react-router';
import { api } from '../api/client';
import { useEnvMutation, useEnvQuery } from '../api/hooks';
import { useSession } from '../api/session';
import { MutationError } from '../components/mutation-feedback';
import { Page } from '../components/page';
import { Pager } from '../components/pager';
import { QueryState } from '../components/query-state';
import { credentialsBody, credentialsRefused, IntegrationFields } from './integration-form';

export function IntegrationPage() {
  const uniqueKey = useParams().uniqueKey!;
  const path = `/integrations/${encodeURIComponent(uniqueKey)}`;
  const integration = useEnvQuery(['integrations', uniqueKey], () =>
    api<{ data: Integration }>(path, { query: { include: 'webhook' } }),
  );
  return (
    <Page title={`Integration ${uniqueKey}`}>
      <QueryState query={integration} label="the integration" empty="">
        {({ data }) => <IntegrationDetail integration={data} path={path} />}
      </QueryState>
    </Page>
  );
}

function IntegrationDetail({ integration, path }: { integration: Integration; path: string }) {
  const { can } = useSession();
  const navigate = useNavigate();
  const provider = useEnvQuery(
    ['providers', integration.provider],
    () => api<{ data: ApiProvider }>(`/providers/${encodeURIComponent(integration.provider)}`),
    { staleTime: Infinity },
  );
  const [displayName, setDisplayName] = useState(integration.display_name);
  const [values, setValues] = useState<Record<string, string>>({});
  const update = useEnvMutation(
    () =>
      api<{ data: Integration }>(path, {
        method: 'PATCH',
        body: {
          display_name: displayName,
          credentials: provider.data ? credentialsBody(provider.data.data, values) : undefined,
        },
      }),
    [['integrations']],
    { onSuccess: () => setValues({}) },
  );
  const remove = useEnvMutation(() => api(path, { method: 'DELETE' }), [['integrations']], {
    onSuccess: () => navigate('/integrations'),
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (provider.data && credentialsRefused(provider.data.data, values)) return;
    update.mutate(undefined);
  };
  const writable = can('environment:integrations:write');
  return (
    <Stack>
      <Group>
        <Badge>{integration.provider}</Badge>
        <Text size="sm">Created {new Date(integration.created_at).toLocaleString()}</Text>
      </Group>
      {integration.webhook_url && (
        <Card withBorder>
          <Text fw={600}>Webhook URL</Text>
          <Text size="sm">Give this URL to {integration.provider} to receive its webhooks.</Text>
          <Group gap="xs" wrap="nowrap">
            <Code data-testid="webhook-url">{integration.webhook_url}</Code>
            <CopyButton value={integration.webhook_url}>
              {({ copied, copy }) => (
                <Button size="xs" variant="default" onClick={copy}>
                  {copied ? 'Copied' : 'Copy'}
                </Button>
              )}
            </CopyButton>
          </Group>
        </Card>
      )}
      {writable && (
        <form onSubmit={submit} aria-label="Edit integration">
          <Stack maw={560}>
            <Title order={2} size="h4">
              Settings
            </Title>
            <TextInput
              label="Display name"
              value={displayName}
              onChange={(e) => setDisplayName(e.currentTarget.value)}
            />
            {provider.data && (
              <IntegrationFields
                provider={provider.data.data}
                values={values}
                onChange={(name, value) => setValues((v) => ({ ...v, [name]: value }))}
                editing
              />
            )}
            <MutationError mutation={update} title="The integration was not saved" />
            {update.isSuccess && <Text role="status">Saved.</Text>}
            <Group>
              <Button type="submit" loading={update.isPending}>
                Save
              </Button>
              <Button
                color="red.9"
                variant="outline"
                loading={remove.isPending}
                onClick={() => {
                  if (
                    window.confirm(`Delete the integration ${integration.unique_key} and its connections?`)
                  ) {
                    remove.mutate(undefined);
                  }
                }}
              >
                Delete
              </Button>
            </Group>
            <MutationError mutation={remove} title="The integration was not deleted" />
          </Stack>
        </form>
      )}
      {can('environment:functions:read') && <IntegrationFunctions uniqueKey={integration.unique_key} />}
    </Stack>
  );
}

function IntegrationFunctions({ uniqueKey }: { uniqueKey: string }) {
  const [page, setPage] = useState(0);
  const functions = useEnvQuery(['functions', uniqueKey, page], () =>
    api<{ data: DeployedFunction[]; pagination: { total: number; page: number; limit: number } }>(
      `/integrations/${encodeURIComponent(uniqueKey)}/functions`,
      { query: { page, limit: 20 } },
    ),
  );
  return (
    <Stack gap="xs">
      <Title order={2} size="h4">
        Deployed functions
      </Title>
      <QueryState
        query={functions}
        label="functions"
        empty="No function deployed."
        isEmpty={(d) => d.data.length === 0}
      >
        {({ data, pagination }) => (
          <>
            <Table aria-label="Deployed functions">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Name</Table.Th>
                  <Table.Th>Type</Table.Th>
                  <Table.Th>Enabled</Table.Th>
                  <Table.Th>Last deployed</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {data.map((fn) => (
                  <Table.Tr key={`${fn.type}-${fn.name}`}>
                    <Table.Td>{fn.name}</Table.Td>
                    <Table.Td>{fn.type}</Table.Td>
                    <Table.Td>{fn.enabled ? 'yes' : 'no'}</Table.Td>
                    <Table.Td>{new Date(fn.last_deployed).toLocaleString()}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
            <Pager
              page={page}
              hasMore={(page + 1) * pagination.limit < pagination.total}
              onChange={setPage}
            />
          </>
        )}
      </QueryState>
    </Stack>
  );
}
