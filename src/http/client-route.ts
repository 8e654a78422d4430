import type { FastifyReply, FastifySchema } from 'fastify';

/** How the client API authenticates, as the OpenAPI document names it (see app.ts). */
const BEARER_AUTH = [{ bearerAuth: [] }];

/**
 * The schema of a client API route, which takes a bearer token: its OpenAPI tag and summary,
 * then what it validates and answers (`params`, `querystring`, `body`, `response`).
 */
export function clientSchema<const S extends FastifySchema>(tag: string, summary: string, schema: S) {
  return { tags: [tag], security: BEARER_AUTH, summary, ...schema };
}

/** Answers 204, with no body, once `work` is done. */
export async function noContent(reply: FastifyReply, work: Promise<unknown>): Promise<FastifyReply> {
  await work;
  return reply.code(204).send();
}
