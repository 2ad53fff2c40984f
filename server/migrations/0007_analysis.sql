-- Post-game analysis (server/analysis.py, docs/players.md "Analysis"): one row per archived
-- game, queued in the archive's own transaction (so every archived game gets one), taken by an
-- analysis worker under a lease, and holding the finished analysis.
CREATE TABLE game_analysis (
    game_id     text PRIMARY KEY REFERENCES games (id) ON DELETE CASCADE,
    status      text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'failed')),
    tries       smallint NOT NULL DEFAULT 0 CHECK (tries >= 0),  -- leases taken so far
    lease_until timestamptz,                  -- a worker holds the job until then
    queued_at   timestamptz NOT NULL,         -- the game's end: the newest games go first
    done_at     timestamptz,
    cpu_ms      integer CHECK (cpu_ms >= 0),  -- what the analysis cost
    analysis    bytea,                        -- gzip-compressed JSON (docs/notation.md)
    CHECK ((status = 'done') = (analysis IS NOT NULL))
);
-- The queue: pending jobs, newest game first.
CREATE INDEX game_analysis_pending ON game_analysis (queued_at DESC) WHERE status = 'pending';
-- Every game archived before this migration is queued too.
INSERT INTO game_analysis (game_id, queued_at) SELECT id, ended_at FROM games;
