-- Leaderboards as a snapshot (server/leaderboard.py): every family's board with each player's
-- rank written out, so that the top of a board and one player's rank are both a single index
-- read. Rebuilt by one process at most every LEADERBOARD_REFRESH_S, when a rating or an
-- account changed or the hour turned (REFRESH ... CONCURRENTLY: the unique index below).
-- On the board: not provisional (games >= server.ratings.PROVISIONAL_GAMES = 10) and active
-- (a rated game within server.leaderboard.ACTIVE_DAYS = 30 days, as of the last refresh).
-- Change those constants and this view together (a new migration).
CREATE MATERIALIZED VIEW boards AS
SELECT family, player_id, rating, games,
       row_number() OVER (PARTITION BY family ORDER BY rating DESC, player_id) AS rank
FROM ratings
WHERE games >= 10 AND last_game_at > now() - interval '30 days';

CREATE UNIQUE INDEX boards_player ON boards (family, player_id);
CREATE INDEX boards_rank ON boards (family, rank);
