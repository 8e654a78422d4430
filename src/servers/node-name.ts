import { BadRequestError } from '../shared/errors.ts';

/** The node of a single-machine install, and of every server created without `--node`. */
export const DEFAULT_NODE = 'local';

/** 1 to 64 characters of lowercase letters, digits, `-`, `_` and `.`. */
const NODE_NAME = /^[a-z0-9._-]{1,64}$/;

/**
 * Checks a node name: the machine whose worker holds a server's volume and runs its jobs
 * (`aerie server create --node`, `aerie worker --node`). Names compare exactly.
 */
export function nodeName(raw: string): string {
  if (!NODE_NAME.test(raw)) {
    throw new BadRequestError(
      `A node name is 1 to 64 characters of a-z, 0-9, "-", "_" and ".", got "${raw}".`,
    );
  }
  return raw;
}
