"""Rules for text one person shows to others: player names, table names and chat lines.

Owns: what such text may contain (docs/protocol.md, "Text rules"). Every check answers a plain
sentence naming the problem, or None when the text is fine; callers turn it into their own
error (HTTP 400 `bad_request`, websocket `error bad_message`). Imports nothing of the project
(the websocket layer uses it and must not import the engine).

Refused everywhere:
- control characters (Unicode category Cc: C0, DEL, C1 -- tabs and newlines too), lone
  surrogates (Cs), the line and paragraph separators U+2028/U+2029 and noncharacters;
- bidi embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069), which reorder the
  text around them;
- text with nothing visible: only spaces, zero-width or other invisible characters (format
  characters such as U+200B, fillers such as U+3164) and combining marks;
- text that starts with a combining mark (it would sit on whatever precedes it), and more than
  MAX_MARKS combining marks in a row.
Zero-width joiners inside visible text (emoji sequences, Indic and Persian scripts) are fine.

Player names must also not read as a bot's label (`bot_like`), as staff or the service itself,
as another guest's quick-play label or as the archive's name for a deleted account (`reserved`).

Also owns `digits`, the test of a number a client sends as text (a query parameter, a port, a
map key), and `account_reading`, what a name reads as beside account names (Unicode's
confusables, TR39), so that a guest cannot sit under a lookalike of an account's username.
"""

from __future__ import annotations

import re
import unicodedata

from confusable_homoglyphs import confusables  # type: ignore[import-untyped]

USERNAME = re.compile(r"[A-Za-z0-9_-]{3,20}")  # an account name (docs/players.md)
MAX_PLAYER_NAME = 32
MAX_TABLE_NAME = 60
MAX_MARKS = 8


def digits(text: str) -> bool:
    """Whether ``text`` is one or more ASCII digits, which `int()` reads (`str.isdigit` also
    takes "²" and other digits `int()` refuses)."""
    return text.isascii() and text.isdigit()
BIDI_CONTROLS = frozenset(chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A)))
SEPARATORS = frozenset("\u2028\u2029")
# Letters and symbols that draw nothing (Unicode "default ignorable" or blank glyphs that are
# not in a format or space category).
BLANKS = frozenset(
    "\u115f\u1160\u17b4\u17b5\u180e\u2800\u3164\uffa0\u034f\u061c\u180b\u180c\u180d\u180f"
)
# Characters drawn like the letters of "bot" (after NFKC and case folding).
LOOKALIKES = str.maketrans({
    "0": "o", "\u043e": "o", "\u03bf": "o", "\u0585": "o", "\u00f8": "o", "\u0275": "o",
    "\u0432": "b", "\u03b2": "b", "\u044c": "b", "\u0184": "b", "\u0185": "b", "\u13cf": "b",
    "\u0442": "t", "\u03c4": "t", "\u0167": "t", "\u01ad": "t", "\u13a2": "t",
})
BOT_LABEL = re.compile(r"bot\d*")


def _is_mark(ch: str) -> bool:
    return unicodedata.category(ch).startswith("M")


def _invisible(ch: str) -> bool:
    category = unicodedata.category(ch)
    return ch.isspace() or category in ("Cf", "Zs", "Zl", "Zp") or category.startswith("M") \
        or ch in BLANKS


def _noncharacter(code: int) -> bool:
    return 0xFDD0 <= code <= 0xFDEF or (code & 0xFFFE) == 0xFFFE


def problem(text: str) -> str | None:
    """Why `text` may not be shown to others, or None. `text` is taken as it is (callers strip
    outer spaces first where they do)."""
    if text.isascii():  # the common case: only controls and blank text to look for
        if not text.isprintable():
            return "must not contain control characters"
        return None if text.strip() else "must contain a visible character"
    marks = 0
    for index, ch in enumerate(text):
        if " " <= ch < "\x7f":
            marks = 0
            continue
        category = unicodedata.category(ch)
        if category in ("Cc", "Cs") or ch in SEPARATORS or _noncharacter(ord(ch)):
            return "must not contain control characters"
        if ch in BIDI_CONTROLS:
            return "must not contain bidi override or isolate characters"
        if category.startswith("M"):
            if index == 0:
                return "must not start with a combining mark"
            marks += 1
            if marks > MAX_MARKS:
                return f"must not stack more than {MAX_MARKS} combining marks"
        else:
            marks = 0
    if all(ch.isspace() or (ch >= "\x7f" and _invisible(ch)) for ch in text):
        return "must contain a visible character"
    return None


def skeleton_words(text: str) -> list[str]:
    """The words `text` reads as: NFKC, case folded, accents and invisible characters dropped,
    lookalike letters and digits mapped, split on everything that is not a letter or digit,
    and runs of one-letter words joined ("B.O.T." reads as "bot")."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    bare = "".join(ch for ch in unicodedata.normalize("NFD", folded)
                   if not _is_mark(ch) and unicodedata.category(ch) != "Cf")
    mapped = unicodedata.normalize("NFC", bare).translate(LOOKALIKES)
    words: list[str] = []
    for word in re.split(r"[\W_]+", mapped):
        if not word:
            continue
        if len(word) == 1 and words and words[-1].startswith("\x00"):
            words[-1] += word
        elif len(word) == 1:
            words.append("\x00" + word)
        else:
            words.append(word)
    return [word.lstrip("\x00") for word in words]


def _prototypes() -> dict[str, str]:
    """Unicode's confusables (UTS #39): each character that is drawn like another, mapped to
    that prototype ("\u0430" Cyrillic a to "a", "I" to "l", "0" to "O", "m" to "rn"). In the
    data each such character lists exactly one glyph, its prototype; a prototype lists all the
    characters drawn like it. (Its keys of several characters, right-to-left letters wrapped
    in marks and sequences, have no prototype in ASCII.)"""
    return {char: glyphs[0]["c"] for char, glyphs in confusables.confusables_data.items()
            if len(char) == 1 and len(glyphs) == 1}


PROTOTYPES = str.maketrans(_prototypes())
# The reading of an account name (ASCII letters, digits, _ and -) in SQL, for an index on
# players (server/migrations/0010_username_reading.sql); a test checks that it agrees with
# account_reading.
USERNAME_READING_SQL = "replace(translate(lower(username), 'i10', 'llo'), 'm', 'rn')"


def account_reading(name: str) -> str | None:
    """What `name` reads as beside account names, which are one in any case: compatibility
    forms folded (NFKC), accents, other combining marks and invisible format characters
    dropped, then each character replaced by the prototype it is drawn like (the UTS #39
    skeleton) in upper case and again in lower case, so that letters drawn alike in either
    case read the same (I, l, 1 and i; O, o and 0; m and rn). None when that is not ASCII
    text, which no username is. "alice", "\u0410LICE" (a Cyrillic A) and "a1ice" read alike
    ("allce"), and so do "Ian" and "lan"."""
    folded = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", name))
    bare = "".join(ch for ch in folded
                   if not _is_mark(ch) and unicodedata.category(ch) != "Cf")
    reading = bare.upper().translate(PROTOTYPES).lower().translate(PROTOTYPES)
    return reading if reading.isascii() else None


def bot_like(name: str) -> bool:
    """True when `name` would read as the label the client shows for a bot seat ("Bot",
    "Bot 2", "Bot (greedy)", "ann (bot)"): one of its words is "bot", or all of it together
    is "bot" followed by digits only. Names that merely contain the letters (Botond, Abbot,
    Robot) are fine."""
    words = skeleton_words(name)
    return "bot" in words or bool(BOT_LABEL.fullmatch("".join(words)))


# Words no name may read as: staff, the service, spectators, guests (besides the bot label).
RESERVED_WORDS = frozenset({
    "admin", "administrator", "spectator", "spectators", "moderator", "root", "system",
    "server", "guest", "anonymous",
})
DELETED = ["deleted", "player"]  # the words of server.archive.DELETED_PLAYER


def reserved(name: str) -> bool:
    """True when one of the words `name` reads as is reserved (RESERVED_WORDS), or all of it
    reads as "deleted player"."""
    words = skeleton_words(name)
    return bool(RESERVED_WORDS.intersection(words)) or words == DELETED


def check(value: object, what: str, limit: int) -> str:
    """`value` stripped of outer spaces if it is acceptable text of 1..limit characters;
    raises ValueError with a sentence naming `what` otherwise."""
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string")
    text = value.strip()
    if not text:
        raise ValueError(f"{what} must not be empty")
    if len(text) > limit:
        raise ValueError(f"{what} must be at most {limit} characters")
    reason = problem(text)
    if reason is not None:
        raise ValueError(f"{what} {reason}")
    return text


def player_name(value: object, limit: int) -> str:
    """A person's name at a table: `check`, and not a bot's label."""
    name = check(value, "name", limit)
    if bot_like(name):
        raise ValueError('name must not look like a bot\'s ("Bot" is what bot seats are called)')
    if reserved(name):
        raise ValueError("that name is reserved")
    return name


def chat_text(value: object, limit: int, error: type[Exception] = ValueError) -> str:
    """`value` as a chat line to relay as it is (outer spaces included); raises `error` with a
    sentence naming the problem otherwise."""
    if isinstance(value, str) and len(value) > limit:
        raise error(f'"text" must be 1 to {limit} characters')
    try:
        check(value, '"text"', limit)
    except ValueError as exc:
        raise error(str(exc)) from None
    assert isinstance(value, str)
    return value
