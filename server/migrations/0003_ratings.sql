-- Rated games, ratings per game family, and each seat's record of every archived game.
ALTER TABLE games ADD COLUMN rated boolean NOT NULL DEFAULT false;
ALTER TABLE games ADD COLUMN family text;            -- the rating family of its rules
-- by seat: {"before", "after", "provisional"} of a rated game's rating changes, else NULL
ALTER TABLE games ADD COLUMN rating_changes jsonb;

-- One row per seat of every archived game: who held it, how it went, and its statistics
-- (server/stats.py), so that a player's games, stats and streaks are read from one index.
CREATE TABLE game_players (
    game_id      text NOT NULL REFERENCES games (id) ON DELETE CASCADE,
    seat         smallint NOT NULL,
    player_id    bigint REFERENCES players (id) ON DELETE SET NULL,
    guest        text,                  -- the guest identity that held the seat, until it registers
    account      boolean NOT NULL,      -- held by an account (still true once it is deleted)
    bot          text,                  -- the bot level of a bot seat
    side         smallint NOT NULL,
    family       text NOT NULL,
    preset       text NOT NULL,
    rated        boolean NOT NULL,
    outcome      text NOT NULL CHECK (outcome IN ('win', 'loss', 'draw')),
    ended_at     timestamptz NOT NULL,
    hands        integer NOT NULL,      -- hands played
    hands_won    integer NOT NULL,
    won_domino   integer NOT NULL,      -- hands won by playing out
    won_block    integer NOT NULL,      -- hands won when the layout blocked
    play_points  integer NOT NULL,      -- points scored by this seat's own plays
    bonus_points integer NOT NULL,      -- hand-end bonuses this seat's side received
    best_play    integer NOT NULL,      -- the most points one play of this seat scored
    big_plays    integer NOT NULL,      -- plays of 30 points or more
    PRIMARY KEY (game_id, seat)
);
CREATE INDEX game_players_player ON game_players (player_id, ended_at DESC, game_id)
    WHERE player_id IS NOT NULL;
CREATE INDEX game_players_guest ON game_players (guest) WHERE guest IS NOT NULL;

-- A player's OpenSkill rating in one family (server/ratings.py).
CREATE TABLE ratings (
    player_id    bigint NOT NULL REFERENCES players (id) ON DELETE CASCADE,
    family       text NOT NULL,
    mu           double precision NOT NULL,
    sigma        double precision NOT NULL,
    rating       integer NOT NULL,      -- the shown number (server/ratings.py: display)
    games        integer NOT NULL,      -- rated games played in the family
    last_game_at timestamptz NOT NULL,
    PRIMARY KEY (player_id, family)
);
-- Leaderboards: the top of a family and a player's rank, read from the index alone.
CREATE INDEX ratings_board ON ratings (family, rating DESC, player_id)
    INCLUDE (games, last_game_at);

-- Every rating change, for the profile's chart.
CREATE TABLE rating_history (
    player_id bigint NOT NULL REFERENCES players (id) ON DELETE CASCADE,
    family    text NOT NULL,
    game_id   text NOT NULL REFERENCES games (id) ON DELETE CASCADE,
    at        timestamptz NOT NULL,
    rating    integer NOT NULL,         -- after the game
    PRIMARY KEY (player_id, family, game_id)
);
CREATE INDEX rating_history_time ON rating_history (player_id, family, at);
