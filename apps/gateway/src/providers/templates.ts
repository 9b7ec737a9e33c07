/**
 * Pre-built function templates (`GET /providers/{provider}/templates`), written for Switchboard: a
 * few common syncs and actions per provider, as Nango's `NangoSyncFunction | NangoActionFunction`.
 * Data only: deploying one is still `nango deploy` of code the customer owns.
 */
type Template =
  | {
      type: 'sync';
      name: string;
      description: string;
      scopes: string[];
      returns: string[];
      json_schema: Record<string, unknown>;
      runs: string;
      auto_start: boolean;
      track_deletes: boolean;
    }
  | {
      type: 'action';
      name: string;
      description: string;
      scopes: string[];
      input?: string;
      returns: string[];
      json_schema: Record<string, unknown>;
    };

const object = (properties: Record<string, unknown>, required: string[]) => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
});
const str = { type: 'string' };
const num = { type: 'number' };

export const PROVIDER_TEMPLATES: Record<string, Template[]> = {
  github: [
    {
      type: 'sync',
      name: 'issues',
      description: 'Every issue of the repositories the connection can read, refreshed hourly',
      scopes: ['repo'],
      returns: ['GithubIssue'],
      json_schema: {
        definitions: {
          GithubIssue: object({ id: str, number: num, title: str, state: str, url: str, updated_at: str }, [
            'id',
            'number',
            'title',
            'state',
            'url',
            'updated_at',
          ]),
        },
      },
      runs: 'every hour',
      auto_start: true,
      track_deletes: false,
    },
    {
      type: 'action',
      name: 'create-issue',
      description: 'Open an issue in a repository',
      scopes: ['repo'],
      input: 'CreateGithubIssue',
      returns: ['GithubIssue'],
      json_schema: {
        definitions: {
          CreateGithubIssue: object({ repo: str, title: str, body: str }, ['repo', 'title']),
          GithubIssue: object({ id: str, number: num, title: str, url: str }, [
            'id',
            'number',
            'title',
            'url',
          ]),
        },
      },
    },
  ],
  slack: [
    {
      type: 'action',
      name: 'send-message',
      description: 'Post a message to a channel',
      scopes: ['chat:write'],
      input: 'SlackMessageInput',
      returns: ['SlackMessage'],
      json_schema: {
        definitions: {
          SlackMessageInput: object({ channel: str, text: str }, ['channel', 'text']),
          SlackMessage: object({ ts: str, channel: str }, ['ts', 'channel']),
        },
      },
    },
    {
      type: 'sync',
      name: 'channels',
      description: 'The public channels of the workspace, refreshed daily',
      scopes: ['channels:read'],
      returns: ['SlackChannel'],
      json_schema: {
        definitions: {
          SlackChannel: object({ id: str, name: str, is_archived: { type: 'boolean' } }, ['id', 'name']),
        },
      },
      runs: 'every day',
      auto_start: true,
      track_deletes: true,
    },
  ],
  hubspot: [
    {
      type: 'sync',
      name: 'contacts',
      description: 'CRM contacts with their e-mail and name, refreshed every 30 minutes',
      scopes: ['crm.objects.contacts.read'],
      returns: ['HubspotContact'],
      json_schema: {
        definitions: {
          HubspotContact: object(
            { id: str, email: { type: ['string', 'null'] }, first_name: str, last_name: str },
            ['id', 'email'],
          ),
        },
      },
      runs: 'every 30 minutes',
      auto_start: true,
      track_deletes: false,
    },
    {
      type: 'action',
      name: 'create-contact',
      description: 'Create a CRM contact',
      scopes: ['crm.objects.contacts.write'],
      input: 'CreateHubspotContact',
      returns: ['HubspotContact'],
      json_schema: {
        definitions: {
          CreateHubspotContact: object({ email: str, first_name: str, last_name: str }, ['email']),
          HubspotContact: object({ id: str, email: str }, ['id', 'email']),
        },
      },
    },
  ],
};
