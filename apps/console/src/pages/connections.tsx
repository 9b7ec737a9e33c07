import {
  Anchor,
  Badge,
  Button,
  Code,
  CopyButton,
  Group,
  Modal,
  MultiSelect,
  Stack,
  Table,
  Text,
  TextInput,
} from '@mantine/core';
import type { ApiPublicConnection, ConnectSessionCreated, Integration } from '@switchboard/contracts';
import { useDebouncedValue } from '@mantine/hooks';
import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { api } from '../api/client';
import { useEnvMutation, useEnvQuery } from '../api/hooks';
import { useSession } from '../api/session';
import { MutationError } from '../components/mutation-feedback';
import { Page } from '../components/page';
import { Pager } from '../components/pager';
import { QueryState } from '../components/query-state';

const PAGE_SIZE = 50;

/** `key=value, key2=value2` into `tags[key]=value` query parameters. */
function tagQuery(text: string): Record<string, string> {
  const query: Record<string, string> = {};
  for (const part of text.split(',')) {
    const [key, ...rest] = part.split('=');
    if (key?.trim() && rest.length) query[`tags[${key.trim()}]`] = rest.join('=').trim();
  }
  return query;
}

export function ConnectionsPage() {
  const { can } = useSession();
  const [search, setSearch] = useState('');
  const [tags, setTags] = useState('');
  const [integrationIds, setIntegrationIds] = useState<string[]>([]);
  const [page, setPage] = useState(0);
  const [debouncedSearch] = useDebouncedValue(search, 300);
  const [debouncedTags] = useDebouncedValue(tags, 300);
  const [linkOpen, setLinkOpen] = useState(false);
  const integrations = useEnvQuery(['integrations'], () => api<{ data: Integration[] }>('/integrations'));
  const connections = useEnvQuery(['connections', debouncedSearch, debouncedTags, integrationIds, page], () =>
    api<{ connections: ApiPublicConnection[] }>('/connections', {
      query: {
        search: debouncedSearch || undefined,
        integrationId: integrationIds.length ? integrationIds.join(',') : undefined,
        ...tagQuery(debouncedTags),
        // One more than shown says whether there is a next page.
        limit: PAGE_SIZE + 1,
        page,
      },
    }),
  );
  const integrationOptions = (integrations.data?.data ?? []).map((i) => i.unique_key);
  return (
    <Page
      title="Connections"
      actions={
        can('environment:connect_sessions:write') && (
          <Button onClick={() => setLinkOpen(true)}>Create connect link</Button>
        )
      }
    >
      <Group align="end">
        <TextInput
          label="Search"
          description="Connection id or end user"
          value={search}
          onChange={(e) => {
            setSearch(e.currentTarget.value);
            setPage(0);
          }}
        />
        <MultiSelect
          label="Integrations"
          data={integrationOptions}
          value={integrationIds}
          onChange={(v) => {
            setIntegrationIds(v);
            setPage(0);
          }}
          clearable
          w={260}
        />
        <TextInput
          label="Tags"
          description="key=value, comma-separated"
          value={tags}
          onChange={(e) => {
            setTags(e.currentTarget.value);
            setPage(0);
          }}
        />
      </Group>
      <QueryState
        query={connections}
        label="connections"
        empty="No connection matches."
        isEmpty={(d) => d.connections.length === 0}
      >
        {({ connections: rows }) => (
          <>
            <Table striped highlightOnHover aria-label="Connections">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Connection id</Table.Th>
                  <Table.Th>Integration</Table.Th>
                  <Table.Th>End user</Table.Th>
                  <Table.Th>Tags</Table.Th>
                  <Table.Th>Status</Table.Th>
                  <Table.Th>Created</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {rows.slice(0, PAGE_SIZE).map((c) => (
                  <Table.Tr key={c.id}>
                    <Table.Td>
                      <Anchor
                        component={Link}
                        to={`/connections/${encodeURIComponent(c.provider_config_key)}/${encodeURIComponent(c.connection_id)}`}
                      >
                        {c.connection_id}
                      </Anchor>
                    </Table.Td>
                    <Table.Td>{c.provider_config_key}</Table.Td>
                    <Table.Td>{c.end_user?.display_name ?? c.end_user?.id ?? ''}</Table.Td>
                    <Table.Td>
                      {Object.entries(c.tags)
                        .map(([k, v]) => `${k}=${v}`)
                        .join(', ')}
                    </Table.Td>
                    <Table.Td>
                      {c.errors.length ? (
                        <Badge color="red.9">{c.errors.map((e) => e.type).join(', ')} error</Badge>
                      ) : (
                        <Badge color="teal.9">ok</Badge>
                      )}
                    </Table.Td>
                    <Table.Td>{new Date(c.created).toLocaleString()}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
            <Pager page={page} hasMore={rows.length > PAGE_SIZE} onChange={setPage} />
          </>
        )}
      </QueryState>
      <ConnectLinkModal
        opened={linkOpen}
        onClose={() => setLinkOpen(false)}
        integrations={integrationOptions}
      />
    </Page>
  );
}

function ConnectLinkModal({
  opened,
  onClose,
  integrations,
}: {
  opened: boolean;
  onClose(): void;
  integrations: string[];
}) {
  const [endUserId, setEndUserId] = useState('');
  const [email, setEmail] = useState('');
  const [allowed, setAllowed] = useState<string[]>([]);
  const create = useEnvMutation(
    () =>
      api<{ data: ConnectSessionCreated }>('/connect/sessions', {
        method: 'POST',
        body: {
          end_user: { id: endUserId, ...(email ? { email } : {}) },
          ...(allowed.length ? { allowed_integrations: allowed } : {}),
        },
      }),
    [],
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate(undefined);
  };
  const close = () => {
    create.reset();
    onClose();
  };
  return (
    <Modal
      closeButtonProps={{ 'aria-label': 'Close' }}
      opened={opened}
      onClose={close}
      title="Create a connect link"
    >
      <form onSubmit={submit}>
        <Stack>
          <TextInput
            label="End user id"
            data-autofocus
            required
            value={endUserId}
            onChange={(e) => setEndUserId(e.currentTarget.value)}
          />
          <TextInput
            label="End user email"
            type="email"
            value={email}
            onChange={(e) => setEmail(e.currentTarget.value)}
          />
          <MultiSelect
            label="Allowed integrations"
            description="None: every integration"
            data={integrations}
            value={allowed}
            onChange={setAllowed}
          />
          <MutationError mutation={create} title="No connect link was created" />
          {create.data && (
            <Stack gap={4}>
              <Text size="sm">
                Send this link to your customer (valid until{' '}
                {new Date(create.data.data.expires_at).toLocaleString()}):
              </Text>
              <Group gap="xs" wrap="nowrap">
                <Code data-testid="connect-link" style={{ wordBreak: 'break-all' }}>
                  {create.data.data.connect_link}
                </Code>
                <CopyButton value={create.data.data.connect_link}>
                  {({ copied, copy }) => (
                    <Button size="xs" variant="default" onClick={copy}>
                      {copied ? 'Copied' : 'Copy'}
                    </Button>
                  )}
                </CopyButton>
              </Group>
            </Stack>
          )}
          <Group>
            <Button type="submit" loading={create.isPending}>
              Create link
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
