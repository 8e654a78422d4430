/** The shapes of the client API the panel reads (see the README's API table). */

export interface Pagination {
  total: number;
  count: number;
  per_page: number;
  current_page: number;
  total_pages: number;
}

export interface List<T> {
  object: 'list';
  data: T[];
  meta?: { pagination?: Pagination; backup_count?: number };
}

export interface UserAttributes {
  uuid: string;
  username: string;
  email: string;
  first_name: string;
  last_name: string;
}

export interface Account {
  object: 'user';
  attributes: UserAttributes & {
    id: number;
    admin: boolean;
    language: string;
    /** Whether two-factor authentication is on (absent on servers without it). */
    use_totp?: boolean;
  };
}

export interface ActivityLog {
  object: 'activity_log';
  attributes: {
    batch: string | null;
    event: string;
    is_api?: boolean;
    ip: string | null;
    description: string;
    properties: Record<string, unknown>;
    has_additional_metadata: boolean;
    timestamp: string;
  };
  relationships: {
    actor: { object: 'user'; attributes: UserAttributes } | { object: 'null_resource'; attributes: null };
  };
}

export interface ApiKey {
  object: 'api_key';
  attributes: {
    identifier: string;
    description: string;
    allowed_ips: string[];
    last_used_at: string | null;
    created_at: string;
  };
}

export interface CreatedApiKey extends ApiKey {
  meta: { secret_token: string };
}

/** null when idle; otherwise what the server is busy with (`restoring_backup`, `installing`, …). */
export type ServerStatus = string | null;

export interface Server {
  object: 'server';
  attributes: {
    server_owner: boolean;
    identifier: string;
    uuid: string;
    name: string;
    description: string;
    status: ServerStatus;
    is_suspended: boolean;
    is_installing: boolean;
    is_transferring: boolean;
    limits: { disk: number };
    feature_limits: { backups: number };
  };
  meta: { is_server_owner: boolean; user_permissions: string[] };
}

export interface Progress {
  operation: 'backup' | 'restore';
  phase: string;
  bytes_done: number;
  bytes_total: number | null;
  files_done: number;
  files_total: number | null;
  started_at: string;
  updated_at: string;
}

export interface BackupAttributes {
  uuid: string;
  name: string;
  ignored_files: string[];
  sha256_hash: string | null;
  checksum: string | null;
  bytes: number;
  created_at: string;
  completed_at: string | null;
  is_successful: boolean;
  is_locked: boolean;
  /** What the backup's job is doing now (absent on servers that do not report it). */
  progress?: Progress | null;
}

export interface Backup {
  object: 'backup';
  attributes: BackupAttributes;
}

export interface Subuser {
  object: 'server_subuser';
  attributes: {
    uuid: string;
    username: string;
    email: string;
    image: string;
    '2fa_enabled': boolean;
    created_at: string;
    permissions: string[];
  };
}

export interface LoginResponse {
  data:
    | { complete: true; intended: string; user: UserAttributes & { root_admin: boolean } }
    | { complete: false; confirmation_token: string };
}

export interface TwoFactorSetup {
  data: { image_url_data: string; secret: string; qr_code: string };
}

export interface RecoveryTokens {
  object: 'recovery_tokens';
  attributes: { tokens: string[] };
}
