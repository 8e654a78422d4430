/** The shapes of the API key resources the client API answers with. */
export interface KeyResource {
  object: 'api_key';
  attributes: {
    identifier: string;
    description: string;
    allowed_ips: string[];
    last_used_at: string | null;
    created_at: string;
  };
}

export interface KeyList {
  object: 'list';
  data: KeyResource[];
}
