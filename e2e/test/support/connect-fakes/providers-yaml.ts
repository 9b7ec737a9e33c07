import { appConnectionConfigYaml } from '../providers-file';

/** The providers (OAuth 2, API key, basic, client credentials, app) of the connect stack, pointing at the fake. */
export function connectProvidersYaml(providerUrl: string): string {
  const hostPattern = `^${providerUrl.replace(/^https:\/\//, '').replace(/\./g, '\\.')}$`;
  const appLinkPattern = `^${providerUrl.replace(/\./g, '\\.')}/apps/[a-z-]+$`;
  return `fake-oauth:
  display_name: Fake OAuth
  categories: [other]
  auth_mode: OAUTH2
  authorization_url: ${providerUrl}/\${connectionConfig.tenant}/authorize
  token_url: ${providerUrl}/\${connectionConfig.tenant}/token
  scope_separator: ','
  authorization_params:
    prompt: consent
  token_response_metadata: [team]
  docs: https://docs.example.com/fake-oauth
  connection_config:
    tenant:
      type: string
      title: Tenant
      description: The part of your Fake OAuth address before .fake.example.
      pattern: '^[a-z0-9-]+$'
      example: acme

fake-hosted:
  display_name: Fake Hosted OAuth
  categories: [other]
  auth_mode: OAUTH2
  authorization_url: https://\${connectionConfig.host}/hosted/authorize
  token_url: https://\${connectionConfig.host}/hosted/token
  docs: https://docs.example.com/fake-hosted
  connection_config:
    host:
      type: string
      title: Your instance host
      description: Pinned to the provider's own domain (here its loopback address).
      pattern: '${hostPattern}'

fake-routed:
  display_name: Fake Routed
  categories: [other]
  auth_mode: OAUTH2
  authorization_url: ${providerUrl}/\${connectionConfig.tenant}/authorize
  token_url: ${providerUrl}/\${connectionConfig.tenant}/token
  post_connect:
    - url: ${providerUrl}/v1/account
      headers:
        x-tenant: \${connectionConfig.tenant}
      connection_config: { portalId: 'portals[default=true].id' }
  docs: https://docs.example.com/fake-routed
  connection_config:
    tenant:
      type: string
      title: Tenant
      pattern: '^[a-z0-9-]+$'
  webhook:
    signature:
      header: x-fake-signature
    routing:
      - value: { from: body, path: portalId }
        match: connection_config.portalId

fake-key:
  display_name: Fake Key
  categories: [other]
  auth_mode: API_KEY
  proxy:
    base_url: ${providerUrl}
    headers:
      x-api-key: \${apiKey}
    verification:
      method: GET
      endpoints: [/v1/me]
  docs: https://docs.example.com/fake-key
  docs_connect: https://docs.example.com/fake-key/connect
  credentials:
    apiKey:
      type: string
      title: API key
      description: Found under Settings → API.
      secret: true

fake-key-routed:
  display_name: Fake Key Routed
  categories: [other]
  auth_mode: API_KEY
  proxy:
    base_url: ${providerUrl}
    headers:
      authorization: Bearer \${apiKey}
  # As Clerk: the key's instance, asked with the key where the proxy puts it, routes Svix-signed webhooks.
  post_connect:
    - url: ${providerUrl}/v1/instance
      connection_config: { instance_id: id }
  docs: https://docs.example.com/fake-key-routed
  credentials:
    apiKey:
      type: string
      title: Secret key
      secret: true
  webhook:
    signature:
      header: svix-signature
      encoding: base64
      separator: ' '
      prefix: v1,
      payload: '{header:svix-id}.{timestamp}.{body}'
      secret_prefix: whsec_
      secret_encoding: base64
      timestamp:
        from: header
        name: svix-timestamp
        format: unix
        tolerance_seconds: 300
    routing:
      - value: { from: body, path: instance_id }
        match: connection_config.instance_id

fake-basic:
  display_name: Fake Basic
  categories: [other]
  auth_mode: BASIC
  docs: https://docs.example.com/fake-basic

fake-cc:
  display_name: Fake Machine
  categories: [other]
  auth_mode: OAUTH2_CC
  token_url: ${providerUrl}/cc/token
  docs: https://docs.example.com/fake-cc

fake-echo:
  display_name: Fake Echo
  categories: [other]
  auth_mode: OAUTH2
  authorization_url: ${providerUrl}/echo/authorize
  token_url: ${providerUrl}/echo/token
  docs: https://docs.example.com/fake-echo

fake-echo-basic:
  display_name: Fake Echo Basic
  categories: [other]
  auth_mode: OAUTH2
  authorization_url: ${providerUrl}/echo/authorize
  token_url: ${providerUrl}/echo/token
  authorization_method: header
  docs: https://docs.example.com/fake-echo-basic

fake-echo-cc:
  display_name: Fake Echo Machine
  categories: [other]
  auth_mode: OAUTH2_CC
  token_url: ${providerUrl}/echo-cc/token
  docs: https://docs.example.com/fake-echo-cc

fake-app:
  display_name: Fake App
  categories: [other]
  auth_mode: APP
  authorization_url: \${connectionConfig.appPublicLink}/installations/new
  token_url: ${providerUrl}/app/installations/\${connectionConfig.installation_id}/access_tokens
  installation_check:
    authorization_url: ${providerUrl}/gh/login/oauth/authorize
    token_url: ${providerUrl}/gh/login/oauth/access_token
    installations_url: ${providerUrl}/gh/user/installations
  docs: https://docs.example.com/fake-app
${appConnectionConfigYaml(appLinkPattern)}
fake-app-oauth:
  display_name: Fake App OAuth
  categories: [other]
  auth_mode: CUSTOM
  authorization_url: \${connectionConfig.appPublicLink}/installations/new
  token_url: ${providerUrl}/gh/login/oauth/access_token
  installation_check:
    authorization_url: ${providerUrl}/gh/login/oauth/authorize
    token_url: ${providerUrl}/gh/login/oauth/access_token
    installations_url: ${providerUrl}/gh/user/installations
  proxy:
    base_url: ${providerUrl}
  docs: https://docs.example.com/fake-app-oauth
${appConnectionConfigYaml(appLinkPattern)}`;
}
