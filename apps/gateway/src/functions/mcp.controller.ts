import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ErrorCode as McpErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { Body, Controller, Get, Inject, Post, Query, Req, Res, UseFilters } from '@nestjs/common';
import {
  ACTION_REPLY_BUCKET,
  SwitchboardError,
  type Caller as CallerType,
  type DeployedFunction,
  CONNECTIONS_API_REQUESTS,
  FUNCTIONS_API_REQUESTS,
  FUNCTION_HOST_REQUESTS,
} from '@switchboard/contracts';
import { NATS_CONNECTION, NatsRequester, parseStoredJson, PayloadStore } from '@switchboard/messaging';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { NatsConnection } from 'nats';
import { Caller } from '../access/caller.decorator';
import { RequireScope } from '../access/route-access';
import { GATEWAY_ENV, type GatewayEnv } from '../config/env';
import { CodeStatusFilter } from '../http/code-status.filter';
import { ConnectionHeadersDto } from '../http/connection-headers';
import { NoQuery, RequestHeaders } from '../http/validation';

/** Pages of this many actions are read to list the tools (the functions API's largest page). */
const PAGE = 100;

type DeployedAction = Extract<DeployedFunction, { type: 'action' }>;

/**
 * An action as an MCP tool, as Nango lists it: the action's name, its description (else its name), and
 * its input model's JSON schema as an object schema. An action without input (or a `null` one) takes
 * an empty object; one whose input is not an object cannot be a tool and is left out.
 */
export function actionTool(action: DeployedAction): Tool | undefined {
  const definitions = (action.json_schema?.definitions ?? {}) as Record<string, Record<string, unknown>>;
  let input = action.input ? definitions[action.input] : undefined;
  if (input?.type === 'null') input = undefined;
  if (input && input.type !== 'object') return undefined;
  const inputSchema: Tool['inputSchema'] = { type: 'object' };
  if (input?.properties) inputSchema.properties = input.properties as Record<string, object>;
  if (Array.isArray(input?.required)) inputSchema.required = input.required as string[];
  if (typeof input?.description === 'string') inputSchema.description = input.description;
  return { name: action.name, description: action.description || action.name, inputSchema };
}

/**
 * `/mcp`: a connection's actions as MCP tools over the Streamable HTTP transport, stateless (each POST
 * is answered on its own, as Nango serves it). `Connection-Id` and `Provider-Config-Key` name the
 * connection; a tool call runs the action for it exactly as `POST /action/trigger` does.
 */
@Controller('mcp')
@UseFilters(new CodeStatusFilter({ unknown_connection: 400 }))
export class McpController {
  constructor(
    private readonly nats: NatsRequester,
    @Inject(GATEWAY_ENV) private readonly env: GatewayEnv,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
  ) {}

  @Post()
  @RequireScope('environment:actions:trigger')
  async post(
    @Caller() caller: CallerType,
    @Body() body: unknown,
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @RequestHeaders() parsed: ConnectionHeadersDto,
    @Query() _query: NoQuery,
  ): Promise<void> {
    const connectionId = parsed['connection-id'];
    const providerConfigKey = parsed['provider-config-key'];
    await this.requireConnection(caller, connectionId, providerConfigKey);

    const server = new Server(
      { name: 'Switchboard connection tools', version: '1.0.0' },
      { capabilities: { tools: {} } },
    );
    let actions: Promise<DeployedAction[]> | undefined;
    const enabledActions = () => (actions ??= this.actions(caller, providerConfigKey));
    server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: (await enabledActions()).flatMap((action) => actionTool(action) ?? []),
    }));
    server.setRequestHandler(CallToolRequestSchema, async (call): Promise<CallToolResult> => {
      const action = (await enabledActions()).find((a) => a.name === call.params.name);
      if (!action || !actionTool(action)) {
        throw new McpError(McpErrorCode.InvalidParams, `Tool ${call.params.name} not found`);
      }
      return this.callTool(caller, connectionId, providerConfigKey, action.name, call.params.arguments);
    });

    // The transport reads the message we parsed; without one it would wait for a body already consumed.
    if (body === null || typeof body !== 'object') {
      void reply
        .status(400)
        .type('application/json')
        .send({
          jsonrpc: '2.0',
          error: { code: -32700, message: 'Parse error: no JSON-RPC message' },
          id: null,
        });
      return;
    }
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    await server.connect(transport);
    // The transport writes the answer itself; the headers the hooks set (rate limit, CORS) go with it.
    void reply.hijack();
    for (const [name, value] of Object.entries(reply.getHeaders())) {
      if (value !== undefined) reply.raw.setHeader(name, value as string | number | string[]);
    }
    reply.raw.on('close', () => {
      void transport.close();
      void server.close();
    });
    await transport.handleRequest(request.raw, reply.raw, body);
  }

  /** Stateless: there is no server-sent event stream to open (Nango's answer, word for word). */
  @Get()
  @RequireScope('environment:actions:trigger')
  notAllowed(@Res() reply: FastifyReply): void {
    void reply
      .status(405)
      .header('allow', 'POST')
      .type('application/json')
      .send({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed.' }, id: null });
  }

  private async requireConnection(
    caller: CallerType,
    connectionId: string,
    providerConfigKey: string,
  ): Promise<void> {
    try {
      await this.nats.call(CONNECTIONS_API_REQUESTS.get, {
        caller,
        connectionId,
        providerConfigKey,
        includeCredentials: false,
        includeRefreshToken: false,
        forceRefresh: false,
        refreshGithubAppJwtToken: false,
      });
    } catch (error) {
      if (
        error instanceof SwitchboardError &&
        (error.code === 'unknown_connection' ||
          error.code === 'not_found' ||
          error.code === 'unknown_provider_config')
      ) {
        throw new SwitchboardError(
          'unknown_connection',
          'Provided connection-id and provider-config-key do not match a valid connection',
        );
      }
      throw error;
    }
  }

  /** The enabled actions of the integration, every page of them. */
  private async actions(caller: CallerType, providerConfigKey: string): Promise<DeployedAction[]> {
    const found: DeployedAction[] = [];
    for (let page = 0; ; page++) {
      const res = await this.nats.call(FUNCTIONS_API_REQUESTS.list, {
        caller,
        uniqueKey: providerConfigKey,
        query: { type: 'action', page, limit: PAGE },
      });
      for (const fn of res.data) if (fn.type === 'action' && fn.enabled) found.push(fn);
      if (res.data.length < PAGE || (page + 1) * PAGE >= res.pagination.total) return found;
    }
  }

  /** Runs the action as `POST /action/trigger` does; its failure is the tool's error, not the request's. */
  private async callTool(
    caller: CallerType,
    connectionId: string,
    providerConfigKey: string,
    actionName: string,
    input: Record<string, unknown> | undefined,
  ): Promise<CallToolResult> {
    try {
      const result = await this.nats.call(
        FUNCTION_HOST_REQUESTS.actionTrigger,
        {
          caller,
          connectionId,
          providerConfigKey,
          actionName,
          input: input ?? {},
          async: false,
          maxRetries: 0,
          invocationId: randomUUID(),
        },
        { timeoutMs: this.env.SWITCHBOARD_ACTION_TIMEOUT_MS + 10_000 },
      );
      if (result.async) return { content: [] };
      const output = result.outputRef ? await this.storedOutput(result.outputRef) : result.output;
      return { content: [{ type: 'text', text: JSON.stringify(output ?? null, null, 2) }] };
    } catch (error) {
      const known = error instanceof SwitchboardError;
      const failure = {
        code: known ? error.code : 'server_error',
        message: known ? error.message : 'The action could not be run',
        ...(known && error.payload !== undefined ? { payload: error.payload } : {}),
      };
      return { isError: true, content: [{ type: 'text', text: JSON.stringify({ error: failure }) }] };
    }
  }

  /** An output too large for a NATS reply, from where the orchestrator put it (then deleted). */
  private async storedOutput(name: string): Promise<unknown> {
    const blob = await new PayloadStore(this.nc, ACTION_REPLY_BUCKET).take(name);
    if (!blob) throw new SwitchboardError('server_error', 'The action output expired before it was sent');
    return parseStoredJson(blob);
  }
}
