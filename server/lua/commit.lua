-- Atomic commit of one table version (the only write path of a table).
-- KEYS: 1 version, 2 state, 3 stream, 4 seat-token hashes, 5 meta, 6 client-id key
--       (all share the table's hash tag, so they live in one cluster slot)
-- ARGV: 1 expected version, 2 state blob, 3 meta blob, 4 notice channel,
--       5 stream max length (0 = keep all), 6 client-id TTL in ms (0 = no client id),
--       7 token op ("", "set", "del"), 8 token seat, 9 token hash,
--       10 number of frames, then (audience, frame) pairs
-- Returns {"ok", new version} | {"stale", current version} | {"dup", version first accepted}
local cid_ttl = tonumber(ARGV[6])
if cid_ttl > 0 then
  local prior = redis.call('GET', KEYS[6])
  if prior then
    return {'dup', tonumber(prior)}
  end
end
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current ~= tonumber(ARGV[1]) then
  return {'stale', current}
end
local v = current + 1
local id = '0-' .. string.format('%d', v)
redis.call('SET', KEYS[1], v)
redis.call('SET', KEYS[2], ARGV[2])
redis.call('SET', KEYS[5], ARGV[3])
if ARGV[7] == 'set' then
  redis.call('HSET', KEYS[4], ARGV[8], ARGV[9])
elseif ARGV[7] == 'del' then
  redis.call('HDEL', KEYS[4], ARGV[8])
end
local n = tonumber(ARGV[10])
local entry = {}
for i = 1, 2 * n do
  entry[i] = ARGV[10 + i]
end
local maxlen = tonumber(ARGV[5])
if maxlen > 0 then
  redis.call('XADD', KEYS[3], 'MAXLEN', maxlen, id, unpack(entry))
else
  redis.call('XADD', KEYS[3], id, unpack(entry))
end
if cid_ttl > 0 then
  redis.call('SET', KEYS[6], v, 'PX', cid_ttl)
end
redis.call('PUBLISH', ARGV[4], v)
return {'ok', v}
