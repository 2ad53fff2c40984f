-- The archive of finished games: one row per table, written once when its game ends.
CREATE TABLE games (
    id           text PRIMARY KEY,               -- the table id
    name         text NOT NULL,
    rules        jsonb NOT NULL,                 -- the rules spec (a preset name or an object)
    preset       text NOT NULL,
    players      smallint NOT NULL CHECK (players BETWEEN 2 AND 4),
    seat_names   text[] NOT NULL,                -- by seat
    seat_bots    text[] NOT NULL,                -- by seat: the bot level, or NULL for a person
    -- by seat: the account that held it (NULL: seats are not bound to accounts yet)
    seat_players bigint[],
    sides        jsonb NOT NULL,                 -- the seats of each side
    winner_side  smallint,                       -- NULL: nobody won (a tie, an abandoned game)
    end_reason   text NOT NULL,                  -- game_end, forfeit, abandoned
    end_seat     smallint,                       -- the seat that forfeited, if one did
    scores       integer[] NOT NULL,             -- final score of each side
    hands        integer NOT NULL,               -- hands (rounds) played, the last one included
    private      boolean NOT NULL,
    invite_hash  text,                           -- a private table's SHA-256 of its invite
    created_at   timestamptz NOT NULL,
    started_at   timestamptz,                    -- NULL: not known
    ended_at     timestamptz NOT NULL,
    archived_at  timestamptz NOT NULL DEFAULT now(),
    transcript   bytea NOT NULL,                 -- gzip-compressed JSON (docs/notation.md)
    replay       bytea                           -- gzip-compressed JSON, rendered on first read
);
CREATE INDEX games_ended ON games (ended_at DESC);
