import { aerieProgram } from './cli/program.ts';
import { ConfigError } from './config.ts';
import { AppError, ValidationError } from './shared/errors.ts';
import { warnOnceIfNodeUnsupported } from './shared/node-version.ts';

warnOnceIfNodeUnsupported((notice) => process.stderr.write(`aerie: warning: ${notice}\n`));

try {
  await aerieProgram().parseAsync(process.argv);
} catch (error) {
  const known = error instanceof ConfigError || error instanceof AppError;
  // A refused field says which field and why, as the API's 422 does; the summary alone would not.
  const message =
    error instanceof ValidationError ? error.fields.map((field) => field.message).join(' ') : undefined;
  process.stderr.write(
    `aerie: ${message ?? (known ? error.message : String((error as Error).stack ?? error))}\n`,
  );
  process.exitCode = 1;
}
