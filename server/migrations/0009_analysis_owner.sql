-- The analysis queue is fair between owners (server/analysis.py): each job carries the owner of
-- its table (server.fairness.owner_key of the address that created it; '' when unknown), and
-- the owner with the fewest games waiting is served first.
ALTER TABLE game_analysis ADD COLUMN owner text NOT NULL DEFAULT '';
CREATE INDEX game_analysis_owner ON game_analysis (owner) WHERE status = 'pending';
