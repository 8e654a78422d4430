import { randomUUID } from 'node:crypto';
import { BadRequestError } from '../shared/errors.ts';
import { randomAlphanumeric } from '../shared/random.ts';
import { assertText } from '../shared/text.ts';
import { toStoredTime, type Clock } from '../shared/time.ts';
import { hashPassword } from './password.ts';
import type { UserRepository } from './user.repository.ts';
import { toUser, type User } from './user.ts';

export interface NewUser {
  username: string;
  email: string;
  password?: string | undefined;
  firstName?: string | undefined;
  lastName?: string | undefined;
  admin?: boolean | undefined;
}

const USERNAME = /^[a-z0-9][a-z0-9_.-]{0,190}$/i;
const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,189}$/;

export class UserService {
  constructor(
    private readonly users: UserRepository,
    private readonly clock: Clock,
  ) {}

  /** Creates a user; without a password, one is generated and returned (shown once). */
  async create(input: NewUser): Promise<{ user: User; password: string }> {
    // The command line has no request schema: the text rule is checked here, before any query.
    assertText('email', input.email, 'single-line');
    assertText('password', input.password, 'any');
    assertText('first_name', input.firstName, 'single-line');
    assertText('last_name', input.lastName, 'single-line');
    const username = input.username.trim();
    const email = input.email.trim().toLowerCase();
    if (!USERNAME.test(username)) {
      throw new BadRequestError('A username is 1 to 191 letters, digits, dots, dashes or underscores.');
    }
    if (!EMAIL.test(email)) throw new BadRequestError(`"${input.email}" is not an email address.`);
    if (input.password !== undefined && input.password.length < 8) {
      throw new BadRequestError('A password must be at least 8 characters long.');
    }
    if ((await this.users.findByLogin(username)) ?? (await this.users.findByLogin(email))) {
      throw new BadRequestError('A user with that username or email already exists.');
    }
    const password = input.password ?? randomAlphanumeric(20);
    const now = toStoredTime(this.clock());
    const row = {
      id: randomUUID(),
      username,
      email,
      password_hash: await hashPassword(password),
      first_name: input.firstName ?? username,
      last_name: input.lastName ?? '',
      language: 'en',
      root_admin: input.admin === true ? 1 : 0,
      created_at: now,
      updated_at: now,
    };
    return { user: toUser(await this.users.insert(row)), password };
  }

  async findByLogin(login: string): Promise<User | undefined> {
    const row = await this.users.findByLogin(login);
    return row && toUser(row);
  }

  async count(): Promise<number> {
    return this.users.count();
  }
}
