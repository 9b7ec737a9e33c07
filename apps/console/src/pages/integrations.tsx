import { Anchor, Button, Table } from '@mantine/core';
import type { Integration } from '@switchboard/contracts';
import { Link } from 'react-router';
import { api } from '../api/client';
import { useEnvQuery } from '../api/hooks';
import { useSession } from '../api/session';
import { Page } from '../components/page';
import { QueryState } from '../components/query-state';

export function IntegrationsPage() {
  const { can } = useSession();
  const integrations = useEnvQuery(['integrations'], () => api<{ data: Integration[] }>('/integrations'));
  return (
    <Page
      title="Integrations"
      actions={
        can('environment:integrations:write') && (
          <Button component={Link} to="/integrations/new">
            New integration
          </Button>
        )
      }
    >
      <QueryState
        query={integrations}
        label="integrations"
        empty="No integration yet."
        isEmpty={(d) => d.data.length === 0}
      >
        {({ data }) => (
          <Table striped highlightOnHover aria-label="Integrations">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Unique key</Table.Th>
                <Table.Th>Name</Table.Th>
                <Table.Th>Provider</Table.Th>
                <Table.Th>Created</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {data.map((integration) => (
                <Table.Tr key={integration.unique_key}>
                  <Table.Td>
                    <Anchor
                      component={Link}
                      to={`/integrations/${encodeURIComponent(integration.unique_key)}`}
                    >
                      {integration.unique_key}
                    </Anchor>
                  </Table.Td>
                  <Table.Td>{integration.display_name}</Table.Td>
                  <Table.Td>{integration.provider}</Table.Td>
                  <Table.Td>{new Date(integration.created_at).toLocaleString()}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
      </QueryState>
    </Page>
  );
}
