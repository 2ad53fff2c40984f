-- Player accounts and their login sessions.
CREATE TABLE players (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    username      text NOT NULL CHECK (username ~ '^[A-Za-z0-9_-]{3,20}$'),
    password_hash text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
-- Names are unique without regard to case ("Ada" and "ada" are one name).
CREATE UNIQUE INDEX players_username_key ON players (lower(username));

-- A session id is random and only its SHA-256 is stored; deleting a player ends its sessions.
CREATE TABLE sessions (
    id_hash    bytea PRIMARY KEY,
    player_id  bigint NOT NULL REFERENCES players (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);
CREATE INDEX sessions_player ON sessions (player_id);
CREATE INDEX sessions_expiry ON sessions (expires_at);
