-- What each username reads as beside other names (server.text.account_reading: Unicode's
-- confusables in any case), so that no new account, and no guest's seat, passes for an existing
-- account by letters drawn alike ("lan" for "Ian", "a1ice" for "alice"). The expression is
-- server.text.USERNAME_READING_SQL.
CREATE INDEX players_username_reading ON players
    (replace(translate(lower(username), 'i10', 'llo'), 'm', 'rn'));
