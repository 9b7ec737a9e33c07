import { Anchor, Code, Group, NativeSelect, Table, Text } from '@mantine/core';
import type { ConsoleAuditAction, ConsoleAuditPage } from '@switchboard/contracts';
import { useState } from 'react';
import { Link } from 'react-router';
import { api } from '../api/client';
import { useEnvQuery } from '../api/hooks';
import { useSession } from '../api/session';
import { Page } from '../components/page';
import { PagedTable } from '../components/paged-table';
import { useCursorPages } from '../components/pager';

// A type-checked record of every action, not the contracts' list: that import would bring zod to the page.
const LABELS: Record<ConsoleAuditAction, string> = {
  'connection.read_credentials': "Read a connection's credentials",
  'integration.read_credentials': "Read an integration's credentials",
  'console.sign_in': 'Signed in',
  'console.user_created': 'Added a console user',
  'console.role_changed': "Changed a user's role",
  'console.user_deleted': 'Removed a console user',
};

/** Settings → Audit: who read credentials, signed in or changed console users, newest first (admins). */
export function AuditPage() {
  const { session } = useSession();
  const [action, setAction] = useState('');
  const { page, cursor, reset, go } = useCursorPages<string>();
  const events = useEnvQuery(
    ['console-audit', action, cursor],
    () =>
      api<ConsoleAuditPage>('/console/api/audit', {
        environment: false,
        query: { limit: 25, cursor, action },
      }),
    { enabled: session.user.role === 'admin' },
  );
  return (
    <Page
      title="Audit log"
      actions={
        <Anchor component={Link} to="/settings">
          Back to settings
        </Anchor>
      }
    >
      {session.user.role !== 'admin' ? (
        <Text c="dimmed">Only an admin reads the audit log.</Text>
      ) : (
        <>
          <Group align="end">
            <NativeSelect
              label="Event"
              data={[
                { value: '', label: 'any' },
                ...Object.entries(LABELS).map(([value, label]) => ({ value, label })),
              ]}
              value={action}
              onChange={(e) => {
                setAction(e.currentTarget.value);
                reset();
              }}
            />
          </Group>
          <PagedTable
            query={events}
            label="the audit log"
            empty="No event matches."
            caption="Audit events"
            headers={['When', 'Who', 'What', 'Environment', 'Details']}
            pages={{ page, go }}
            row={(event) => (
              <Table.Tr key={event.id} data-testid="audit-row">
                <Table.Td>{new Date(event.created_at).toLocaleString()}</Table.Td>
                <Table.Td>{event.user_email}</Table.Td>
                <Table.Td>{LABELS[event.action]}</Table.Td>
                <Table.Td>{event.environment ?? '—'}</Table.Td>
                <Table.Td>
                  {Object.entries(event.target).map(([key, value]) => (
                    <Text size="xs" key={key}>
                      {key}: <Code>{value}</Code>
                    </Text>
                  ))}
                </Table.Td>
              </Table.Tr>
            )}
          />
        </>
      )}
    </Page>
  );
}
