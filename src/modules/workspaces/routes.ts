import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../../platform/auth/plugin.js';
import { Ok, errorResponses } from '../../platform/http/schemas.js';
import {
  CreateInvitationBody,
  CreateWorkspaceBody,
  InvitationCreated,
  InvitationList,
  InvitationParams,
  InvitationTokenBody,
  Member,
  MemberList,
  MemberParams,
  SetRoleBody,
  UpdateWorkspaceBody,
  Workspace,
  WorkspaceIdParams,
  WorkspaceList,
} from './schemas.js';
import type { WorkspacesService } from './service.js';

export const workspaceRoutes: FastifyPluginAsyncTypebox<{
  workspaces: WorkspacesService;
  /** Refuses a caller whose account is no longer active (the auth service's check). */
  ensureActive: (userId: string) => Promise<unknown>;
}> = async (app, { workspaces, ensureActive }) => {
  app.addHook('preHandler', async (request) => {
    if (request.principal) await ensureActive(request.principal.userId);
  });
  const tags = ['workspaces'];
  const config = { auth: 'required' as const };
  const me = (request: Parameters<typeof principalOf>[0]) => principalOf(request).userId;

  app.get(
    '/v1/workspaces',
    { config, schema: { tags, summary: 'Your workspaces with your role and the member count', response: { 200: WorkspaceList, ...errorResponses(401) } } },
    async (request) => workspaces.list(me(request)),
  );

  app.post(
    '/v1/workspaces',
    {
      config,
      schema: {
        tags,
        summary: 'Create a workspace; you become its OWNER',
        body: CreateWorkspaceBody,
        response: { 201: Workspace, ...errorResponses(400, 401, 409) },
      },
    },
    async (request, reply) => reply.code(201).send(await workspaces.create(me(request), request.body)),
  );

  app.get(
    '/v1/workspaces/:id',
    {
      config,
      schema: { tags, summary: 'A workspace you belong to', params: WorkspaceIdParams, response: { 200: Workspace, ...errorResponses(400, 401, 404) } },
    },
    async (request) => workspaces.get(me(request), request.params.id),
  );

  app.patch(
    '/v1/workspaces/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Rename a workspace or change its slug (admin or owner)',
        params: WorkspaceIdParams,
        body: UpdateWorkspaceBody,
        response: { 200: Workspace, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request) => workspaces.update(me(request), request.params.id, request.body),
  );

  app.delete(
    '/v1/workspaces/:id',
    {
      config,
      schema: { tags, summary: 'Delete a workspace (owner)', params: WorkspaceIdParams, response: { 200: Ok, ...errorResponses(400, 401, 403, 404) } },
    },
    async (request) => workspaces.remove(me(request), request.params.id),
  );

  app.get(
    '/v1/workspaces/:id/members',
    {
      config,
      schema: {
        tags,
        summary: 'The members of a workspace you belong to',
        params: WorkspaceIdParams,
        response: { 200: MemberList, ...errorResponses(400, 401, 404) },
      },
    },
    async (request) => workspaces.members(me(request), request.params.id),
  );

  app.patch(
    '/v1/workspaces/:id/members/:memberId',
    {
      config,
      schema: {
        tags,
        summary: "Set a member's role (admin or owner); OWNER (owner only) transfers ownership and makes the previous owner ADMIN",
        params: MemberParams,
        body: SetRoleBody,
        response: { 200: Member, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => workspaces.setRole(me(request), request.params.id, request.params.memberId, request.body.role),
  );

  app.delete(
    '/v1/workspaces/:id/members/:memberId',
    {
      config,
      schema: {
        tags,
        summary: 'Remove a member (admin or owner) or leave (yourself); the owner transfers ownership first',
        params: MemberParams,
        response: { 200: Ok, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => workspaces.removeMember(me(request), request.params.id, request.params.memberId),
  );

  app.post(
    '/v1/workspaces/:id/invitations',
    {
      config,
      schema: {
        tags,
        summary: 'Invite someone by email (admin or owner); the single-use wsi_ token is valid 7 days',
        params: WorkspaceIdParams,
        body: CreateInvitationBody,
        response: { 201: InvitationCreated, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => reply.code(201).send(await workspaces.invitations.create(me(request), request.params.id, request.body)),
  );

  app.get(
    '/v1/workspaces/:id/invitations',
    {
      config,
      schema: {
        tags,
        summary: "The workspace's invitations, newest first (admin or owner)",
        params: WorkspaceIdParams,
        response: { 200: InvitationList, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => workspaces.invitations.list(me(request), request.params.id),
  );

  app.delete(
    '/v1/workspaces/:id/invitations/:inviteId',
    {
      config,
      schema: {
        tags,
        summary: 'Withdraw an invitation (admin or owner)',
        params: InvitationParams,
        response: { 200: Ok, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => workspaces.invitations.revoke(me(request), request.params.id, request.params.inviteId),
  );

  app.post(
    '/v1/workspaces/invitations/accept',
    {
      config,
      schema: {
        tags,
        summary: 'Accept an invitation sent to your email; you join the workspace',
        body: InvitationTokenBody,
        response: { 200: Workspace, ...errorResponses(400, 401, 403, 409) },
      },
    },
    async (request) => workspaces.invitations.accept(me(request), request.body.token),
  );

  app.post(
    '/v1/workspaces/invitations/decline',
    {
      config,
      schema: { tags, summary: 'Decline an invitation sent to your email', body: InvitationTokenBody, response: { 200: Ok, ...errorResponses(400, 401, 403) } },
    },
    async (request) => workspaces.invitations.decline(me(request), request.body.token),
  );
};
