-- Friends, blocks and private messages (server/social.py, docs/players.md "Friends, messages
-- and invitations"). Everything of a player goes with the account (ON DELETE CASCADE).

-- ``follower`` follows ``followee``; two players who follow each other are friends.
CREATE TABLE follows (
    follower   bigint NOT NULL REFERENCES players (id) ON DELETE CASCADE,
    followee   bigint NOT NULL REFERENCES players (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (follower, followee),
    CHECK (follower <> followee)
);
-- Who follows a player (the primary key answers whom a player follows).
CREATE INDEX follows_followee ON follows (followee, follower);

-- ``blocker`` blocked ``blocked``: no follows either way, no messages, no invitations.
CREATE TABLE blocks (
    blocker    bigint NOT NULL REFERENCES players (id) ON DELETE CASCADE,
    blocked    bigint NOT NULL REFERENCES players (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (blocker, blocked),
    CHECK (blocker <> blocked)
);
CREATE INDEX blocks_blocked ON blocks (blocked, blocker);

-- A private message; ``read_at`` is set once its recipient has read it.
CREATE TABLE messages (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    sender    bigint NOT NULL REFERENCES players (id) ON DELETE CASCADE,
    recipient bigint NOT NULL REFERENCES players (id) ON DELETE CASCADE,
    body      text NOT NULL CHECK (length(body) BETWEEN 1 AND 1000),
    sent_at   timestamptz NOT NULL DEFAULT now(),
    read_at   timestamptz,
    CHECK (sender <> recipient)
);
-- A conversation's history, newest first, from either side: the pair in a fixed order.
CREATE INDEX messages_pair ON messages (least(sender, recipient), greatest(sender, recipient),
                                        id DESC);
-- A player's unread messages (the counts, and marking a conversation read).
CREATE INDEX messages_unread ON messages (recipient, sender) WHERE read_at IS NULL;
-- A player's conversations (the newest message with each other player), from either side.
CREATE INDEX messages_sender ON messages (sender, id DESC);
CREATE INDEX messages_recipient ON messages (recipient, id DESC);
