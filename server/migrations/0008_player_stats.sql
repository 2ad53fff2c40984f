-- A profile's stats (docs/players.md "Profiles") kept up to date rather than aggregated over
-- every game_players row of the player on each read (server/player_stats.py): one row per
-- account and family, and the games of each preset for the profile's top_preset. The archive
-- updates both in the transaction that writes the game, and registration when a guest's
-- archived games become the account's. Every seat row of the account counts (private games
-- too); streaks follow the order (ended_at, game_id, seat).
CREATE TABLE player_stats (
    player_id      bigint NOT NULL REFERENCES players (id) ON DELETE CASCADE,
    family         text NOT NULL,
    games          integer NOT NULL DEFAULT 0 CHECK (games >= 0),
    wins           integer NOT NULL DEFAULT 0,
    losses         integer NOT NULL DEFAULT 0,
    draws          integer NOT NULL DEFAULT 0,
    hands          bigint NOT NULL DEFAULT 0,
    hands_won      bigint NOT NULL DEFAULT 0,
    won_domino     bigint NOT NULL DEFAULT 0,
    won_block      bigint NOT NULL DEFAULT 0,
    play_points    bigint NOT NULL DEFAULT 0,
    bonus_points   bigint NOT NULL DEFAULT 0,
    best_play      integer NOT NULL DEFAULT 0,
    big_plays      bigint NOT NULL DEFAULT 0,
    longest_streak integer NOT NULL DEFAULT 0,  -- the longest run of consecutive wins
    current_streak integer NOT NULL DEFAULT 0,  -- the run of wins that reaches the newest game
    -- the newest game counted: a game that ends after it goes on from the streaks above, an
    -- older one (archived late) has them recomputed
    last_ended_at  timestamptz,
    last_game_id   text,
    last_seat      smallint,
    PRIMARY KEY (player_id, family)
);

CREATE TABLE player_presets (
    player_id bigint NOT NULL REFERENCES players (id) ON DELETE CASCADE,
    family    text NOT NULL,
    preset    text NOT NULL,
    games     integer NOT NULL CHECK (games >= 0),
    PRIMARY KEY (player_id, family, preset)
);

-- Whether the seat's game is private (as games.private), so that a player's listed games are
-- read from an index that holds none of their private ones.
ALTER TABLE game_players ADD COLUMN private boolean NOT NULL DEFAULT false;
UPDATE game_players gp SET private = true FROM games g WHERE g.id = gp.game_id AND g.private;
CREATE INDEX game_players_listed ON game_players (player_id, ended_at DESC, game_id)
    WHERE player_id IS NOT NULL AND NOT private;

-- Every game archived before this migration is counted (the same query as
-- server/player_stats.py's _REBUILD, over every account).
WITH ordered AS (
    SELECT player_id, family, outcome, ended_at, game_id, seat, hands, hands_won, won_domino,
           won_block, play_points, bonus_points, best_play, big_plays,
           row_number() OVER (PARTITION BY player_id, family ORDER BY ended_at, game_id, seat)
           - row_number() OVER (PARTITION BY player_id, family, outcome = 'win'
                                ORDER BY ended_at, game_id, seat) AS run,
           row_number() OVER (PARTITION BY player_id, family
                              ORDER BY ended_at DESC, game_id DESC, seat DESC) AS back
    FROM game_players WHERE player_id IS NOT NULL
), runs AS (
    SELECT player_id, family, count(*) AS length, min(back) AS newest
    FROM ordered WHERE outcome = 'win' GROUP BY player_id, family, run
), streaks AS (
    SELECT player_id, family, max(length) AS longest,
           coalesce(max(length) FILTER (WHERE newest = 1), 0) AS current
    FROM runs GROUP BY player_id, family
), totals AS (
    SELECT player_id, family, count(*) AS games,
           count(*) FILTER (WHERE outcome = 'win') AS wins,
           count(*) FILTER (WHERE outcome = 'loss') AS losses,
           count(*) FILTER (WHERE outcome = 'draw') AS draws,
           sum(hands) AS hands, sum(hands_won) AS hands_won, sum(won_domino) AS won_domino,
           sum(won_block) AS won_block, sum(play_points) AS play_points,
           sum(bonus_points) AS bonus_points, max(best_play) AS best_play,
           sum(big_plays) AS big_plays
    FROM ordered GROUP BY player_id, family
)
INSERT INTO player_stats (player_id, family, games, wins, losses, draws, hands, hands_won,
                          won_domino, won_block, play_points, bonus_points, best_play,
                          big_plays, longest_streak, current_streak, last_ended_at,
                          last_game_id, last_seat)
SELECT t.player_id, t.family, t.games, t.wins, t.losses, t.draws, t.hands, t.hands_won,
       t.won_domino, t.won_block, t.play_points, t.bonus_points, t.best_play, t.big_plays,
       coalesce(s.longest, 0), coalesce(s.current, 0), o.ended_at, o.game_id, o.seat
FROM totals t
JOIN ordered o ON o.player_id = t.player_id AND o.family = t.family AND o.back = 1
LEFT JOIN streaks s ON s.player_id = t.player_id AND s.family = t.family;

INSERT INTO player_presets (player_id, family, preset, games)
SELECT player_id, family, preset, count(*) FROM game_players WHERE player_id IS NOT NULL
GROUP BY player_id, family, preset;
