/**
 * /admin/v1/organizations/{id}/invitations: the operator invites people into an organization,
 * above all the first admin of one this API created (it has no people, so nobody could invite on
 * its team page). The invitation is the team page's (src/services/tenancy/team.ts, docs/e-mail.md):
 * same link, e-mail, replacement and hourly bound; its inviter is the operator (no user).
 */
import { type OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../app-env";
import { ErrorEnvelopeSchema, IdParamSchema } from "../../contract/schemas";
import { MEMBER_ROLES } from "../../db/schema";
import { hasControlCharacters } from "../../lib/control-characters";
import { MAX_EMAIL_ADDRESS_LENGTH, isPlausibleEmailAddress } from "../../lib/email-address";
import { jsonBodyOn } from "../../middleware/json-body";
import { queueEmails } from "../../services/shared/email-outbox";
import { type PendingInvitation, type TeamDeps, inviteAsOperator, listInvitationsAsOperator } from "../../services/tenancy/team";
import { errorResponses } from "../responses";

const adminSecurity = [{ adminToken: [] }];
const json = <T>(schema: T, description: string) => ({ description, content: { "application/json": { schema } } });
const OrganizationIdParam = IdParamSchema("id", "Organization identifier (UUID).");

/** The invited address: one problem per answer (blank, control characters, too long, not an address). */
const invitationEmailSchema = () =>
  z
    .string({ error: (issue) => (issue.input === undefined || issue.input === null ? "can't be blank" : "must be a string") })
    .trim()
    .superRefine((value, ctx) => {
      const problem =
        value === ""
          ? "can't be blank"
          : hasControlCharacters(value)
            ? "must not contain control characters"
            : value.length > MAX_EMAIL_ADDRESS_LENGTH
              ? `is too long (maximum is ${MAX_EMAIL_ADDRESS_LENGTH} characters)`
              : !isPlausibleEmailAddress(value)
                ? "must be an e-mail address such as name@example.com"
                : null;
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    })
    .openapi({ description: "The address to invite; stored and compared lower-cased.", example: "first.admin@example.com" });

const CreateInvitationBody = z
  .object({
    email: invitationEmailSchema(),
    role: z
      .enum(MEMBER_ROLES, { error: 'must be "admin" or "member"' })
      .default("admin")
      .openapi({ description: "The role the invitee joins with. Default `admin`: an organization's first person is its admin." }),
  })
  .openapi("CreateInvitationRequest");

const InvitationSchema = z
  .object({
    id: z.string().uuid(),
    email: z.string().openapi({ description: "The invited address, lower-cased." }),
    role: z.enum(MEMBER_ROLES),
    status: z.literal("pending").openapi({
      description: "Always `pending` here: accepted, revoked, replaced and expired invitations are neither listed nor returned.",
    }),
    expires_at: z.string().openapi({ format: "date-time", description: "7 days after creation; the link stops working then." }),
    created_at: z.string().openapi({ format: "date-time" }),
  })
  .openapi("Invitation");

const presentInvitation = (invitation: Omit<PendingInvitation, "invitedBy">) => ({
  id: invitation.id,
  email: invitation.email,
  role: invitation.role,
  status: "pending" as const,
  expires_at: invitation.expiresAt.toISOString(),
  created_at: invitation.createdAt.toISOString(),
});

const createInvitationRoute = createRoute({
  method: "post",
  path: "/organizations/{id}/invitations",
  operationId: "adminCreateInvitation",
  tags: ["Admin"],
  summary: "Invite a person into the organization (its first admin, for one)",
  description:
    "How people get into an organization this API created (it has none). The invitation is the team page's: a link that works once, for 7 days, e-mailed to the address through the outbox (`GET /emails/{email_id}` follows it; without SMTP_URL it is `held` there). The inviter is the operator: the e-mail and the pages say \"the operator of CI test analytics\", not a person. The link is also in this response, for the operator to hand over: it is a secret (whoever opens it can join with the role), shown only here and in the e-mail. Opening it, the invitee creates an account (or signs in to theirs) with the invited address and joins with the role; accepting marks the address verified. A pending invitation of the same address is replaced (its link stops working). A person who is already a member is a 400. The organization's invitations, the team page's included, are at most 20 an hour: one more is a 429 `rate_limited` with Retry-After. docs/e-mail.md#invitations.",
  security: adminSecurity,
  request: { params: OrganizationIdParam, body: { required: true, content: { "application/json": { schema: CreateInvitationBody } } } },
  responses: {
    201: json(
      z.object({
        invitation: InvitationSchema,
        invitation_url: z.string().url().openapi({
          description: "The link to accept: `WEB_APP_URL/invitations/<token>`. A secret; shown only in this response (and the e-mail).",
        }),
        email_id: z.string().uuid().openapi({ description: "The invitation's e-mail in the outbox (`GET /emails/{id}`)." }),
      }),
      "The invitation, its link and its e-mail.",
    ),
    ...errorResponses(400, 401, 404, 413, 422, 500, 503),
    429: {
      description:
        "rate_limited: the organization has made 20 invitations within the last hour (the team page's included); wait Retry-After seconds.",
      headers: { "Retry-After": { description: "Seconds until the organization may invite again.", schema: { type: "integer" as const } } },
      content: { "application/json": { schema: ErrorEnvelopeSchema } },
    },
  },
});

const listInvitationsRoute = createRoute({
  method: "get",
  path: "/organizations/{id}/invitations",
  operationId: "adminListInvitations",
  tags: ["Admin"],
  summary: "The organization's pending invitations, newest first (without their links)",
  description: "Invitations not yet accepted, revoked, replaced or expired, whoever made them (the operator or an admin on the team page).",
  security: adminSecurity,
  request: { params: OrganizationIdParam },
  responses: {
    200: json(z.object({ data: z.array(InvitationSchema) }), "The pending invitations."),
    ...errorResponses(401, 404, 500, 503),
  },
});

/** The two routes and the POST's JSON body reader, on the admin app (behind its token check). */
export function registerInvitations(admin: OpenAPIHono<AppEnv>, deps: (c: Context<AppEnv>) => TeamDeps): void {
  admin.use("/organizations/:id/invitations", jsonBodyOn("POST"));
  admin.openapi(createInvitationRoute, async (c) => {
    const created = await inviteAsOperator(deps(c), c.req.valid("param").id, c.req.valid("json"));
    await queueEmails({ queue: c.env.runQueue, logger: c.env.logger }, [created.emailId]);
    return c.json({ invitation: presentInvitation(created.invitation), invitation_url: created.link, email_id: created.emailId }, 201);
  });
  admin.openapi(listInvitationsRoute, async (c) => {
    const pending = await listInvitationsAsOperator(deps(c), c.req.valid("param").id);
    return c.json({ data: pending.map(presentInvitation) }, 200);
  });
}
