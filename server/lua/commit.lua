-- Atomic commit of one table version (the only write path of a table).
-- KEYS: 1 version, 2 state, 3 stream, 4 seat-token hashes, 5 meta, 6 client ids (hash),
--       7.. the table's other keys, which share its lifetime (ARGV[12]; absent when it is -1)
--       (all share the table's hash tag, so they live in one cluster slot),
--       and last, when ARGV[14] is "1", the deadlines zset (single Redis only: in a cluster
--       it lives in another slot and is written by a command of its own)
-- ARGV: 1 expected version, 2 state blob, 3 meta blob ("": unchanged), 4 notice channel,
--       5 stream max length (0 = keep all), 6 client id field ("" = no client id),
--       7 token op ("", "set", "del"), 8 token field (a seat, or "invite"), 9 token hash,
--       10 seat whose token must be ARGV[11] ("" = none), 11 that token's hash,
--       12 lifetime in ms of every key of the table from now (0 = no expiry, -1 = leave
--       every key's lifetime as it is),
--       13 number of frames, then (audience, frame) pairs, then
--       14 "1" when the deadlines zset is the last key, 15 its member for the expected
--       version to remove ("" = none), 16 the member for the new version to add ("" = none),
--       17 that member's due time (ms), 18 "2" when the notice carries the frames and the
--       state (msgpack [version, {audience: frame}, token field or nil, state blob]), "1" the
--       frames only (the state nil), "" or absent: the notice is the new version as ASCII
--       digits, 19 "1" to publish it as a shard channel message
--       (SPUBLISH: Redis Cluster; else PUBLISH), 20 publish only when the channel has more
--       than this many subscribers ("" or absent: always): a single Redis counts them all, so
--       the committing process, which delivers to its own sockets itself, says 1 when it is a
--       subscriber and 0 when not, and a notice nobody else would read is not sent,
--       21 "1" when ARGV[2] is a move to append to the stored state rather than the state
--       (the notice then carries it as a fifth element, its state nil),
--       22 the seat changes the table takes ("" or absent: this commit changes no seat's
--       token): the commit counts as one more of them (field "!seats" of the client ids),
--       and once the table has had that many, 23 says what becomes of it: "refuse" (nothing
--       written: {"closed", current version}), "keep" (made, every key's lifetime left as it
--       is), "" (made as asked)
-- A token op also writes the field "!tok" = its field into the version's stream entry: every
-- socket that authenticated with that seat's token before this version is closed before it is
-- shown this version.
-- Returns {"ok", new version} | {"stale", current version} | {"dup", version first accepted}
--       | {"revoked", current version}: the seat's token is no longer ARGV[11]
--       | {"closed", current version}: the table has had its seat changes (ARGV[22])
if ARGV[6] ~= '' then
  local prior = redis.call('HGET', KEYS[6], ARGV[6])
  if prior then
    return {'dup', tonumber(prior)}
  end
end
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if ARGV[10] ~= '' and redis.call('HGET', KEYS[4], ARGV[10]) ~= ARGV[11] then
  return {'revoked', current}
end
if current ~= tonumber(ARGV[1]) then
  return {'stale', current}
end
local n = tonumber(ARGV[13])
local after = 13 + 2 * n
local ttl = tonumber(ARGV[12])
local seat_changes = tonumber(ARGV[after + 9] or '')
if seat_changes then
  if tonumber(redis.call('HGET', KEYS[6], '!seats') or '0') >= seat_changes then
    if ARGV[after + 10] == 'refuse' then return {'closed', current} end
    if ARGV[after + 10] == 'keep' then ttl = -1 end
  end
end
local v = current + 1
local id = '0-' .. string.format('%d', v)
local function set(key, value)  -- leaving the lifetimes (ttl < 0), a SET keeps the key's too
  if ttl < 0 then redis.call('SET', key, value, 'KEEPTTL') else redis.call('SET', key, value) end
end
set(KEYS[1], v)
if ARGV[3] ~= '' then set(KEYS[5], ARGV[3]) end
if ARGV[7] == 'set' then
  redis.call('HSET', KEYS[4], ARGV[8], ARGV[9])
elseif ARGV[7] == 'del' then
  redis.call('HDEL', KEYS[4], ARGV[8])
end
local appended = ARGV[after + 8] == '1'
if appended then
  redis.call('APPEND', KEYS[2], ARGV[2])  -- keeps the key's lifetime
else
  set(KEYS[2], ARGV[2])
end
local tablekeys = #KEYS
if ARGV[after + 1] == '1' then
  tablekeys = #KEYS - 1
  if ARGV[after + 2] ~= '' then redis.call('ZREM', KEYS[#KEYS], ARGV[after + 2]) end
  if ARGV[after + 3] ~= '' then
    redis.call('ZADD', KEYS[#KEYS], ARGV[after + 4], ARGV[after + 3])
  end
end
local entry = {}
for i = 1, 2 * n do
  entry[i] = ARGV[13 + i]
end
if ARGV[7] ~= '' then
  entry[2 * n + 1] = '!tok'
  entry[2 * n + 2] = ARGV[8]
end
local maxlen = tonumber(ARGV[5])
if maxlen > 0 then
  redis.call('XADD', KEYS[3], 'MAXLEN', maxlen, id, unpack(entry))
else
  redis.call('XADD', KEYS[3], id, unpack(entry))
end
if ARGV[6] ~= '' then
  redis.call('HSET', KEYS[6], ARGV[6], v)
end
if seat_changes then
  redis.call('HINCRBY', KEYS[6], '!seats', 1)
end
if ttl >= 0 then
  for i = 1, tablekeys do
    if ttl > 0 then
      redis.call('PEXPIRE', KEYS[i], ttl)
    else
      redis.call('PERSIST', KEYS[i])
    end
  end
end
local listeners = tonumber(ARGV[after + 7] or '')
if listeners == nil or redis.call('PUBSUB', 'NUMSUB', ARGV[4])[2] > listeners then
  local notice = v
  local carried = ARGV[after + 5]
  if carried == '1' or carried == '2' then  -- built here: a notice nobody reads costs nothing
    local frames = {}
    for i = 1, n do
      frames[ARGV[12 + 2 * i]] = ARGV[13 + 2 * i]
    end
    local field = nil
    if ARGV[7] ~= '' then field = ARGV[8] end
    if carried == '2' and appended then
      notice = '\149' .. cmsgpack.pack(v, frames, field, nil, ARGV[2])  -- a 5-element array
    else
      local state = nil
      if carried == '2' then state = ARGV[2] end
      notice = '\148' .. cmsgpack.pack(v, frames, field, state)  -- a 4-element array
    end
  end
  redis.call(ARGV[after + 6] == '1' and 'SPUBLISH' or 'PUBLISH', ARGV[4], notice)
end
return {'ok', v}
