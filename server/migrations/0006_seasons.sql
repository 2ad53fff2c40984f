-- Seasons (server/seasons.py, docs/players.md "Seasons"): every rated game also scores in the
-- season of its end (UTC; "2026-12" names a season by its first month) for each of its
-- players, in its rating family. Written in the archive's transaction with the ratings; past
-- seasons are kept for good (a player's finishes are shown on the profile).
CREATE TABLE season_scores (
    season     text NOT NULL CHECK (season ~ '^[0-9]{4}-(0[1-9]|1[0-2])$'),
    family     text NOT NULL,
    player_id  bigint NOT NULL REFERENCES players (id) ON DELETE CASCADE,
    points     integer NOT NULL DEFAULT 0 CHECK (points >= 0),
    games      integer NOT NULL DEFAULT 0 CHECK (games >= 0),
    wins       integer NOT NULL DEFAULT 0 CHECK (wins >= 0 AND wins <= games),
    streak     integer NOT NULL DEFAULT 0 CHECK (streak >= 0),  -- consecutive wins, now
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (season, family, player_id)
);
-- A season's board in rank order (points, then more wins, fewer games, the older account).
CREATE INDEX season_scores_board
    ON season_scores (season, family, points DESC, wins DESC, games, player_id);
-- A player's seasons, for the profile.
CREATE INDEX season_scores_player ON season_scores (player_id);
