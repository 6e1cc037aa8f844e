-- extend(KEYS[1..N] = claim keys; ARGV: owner, lease_ms, then one token per key in
-- KEYS order)
-- Reply: an array with one entry per key, in KEYS order: the bulk string "OK"
-- (lease renewed) | "LOST" (not ours any more), or an error reply in that key's
-- place (not a hash): that key only failed. A bad argument fails the whole call
-- before any key is touched.
-- A handler that outlives its lease calls this so nobody takes its key over.
-- One call takes many keys: on Redis Cluster they must share a slot (redis/claim_store.hpp).
local owner = ARGV[1]
local lease_ms = tonumber(ARGV[2])
if #ARGV ~= 2 + #KEYS then
    return redis.error_reply('ERR extend.lua: expected ARGV owner, lease_ms and a token per key')
end
if not lease_ms or lease_ms <= 0 then
    return redis.error_reply('ERR extend.lua: lease_ms must be a positive number')
end

-- One clock reading for every key of the call.
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease_until = string.format('%.0f', now_ms + lease_ms)
-- Same garbage-collection TTL rule as claim.lua.
local gc_ttl = string.format('%.0f', math.max(4 * lease_ms, 60000))

-- One key, exactly as a call with that key alone would answer it.
local function extend(key, token)
    -- pcall: a key that is not a hash fails alone instead of aborting the call.
    local rec = redis.pcall('HMGET', key, 'state', 'owner', 'token')
    if rec.err then return rec end
    -- Owner and token both: after a takeover the same owner may hold a newer token.
    if rec[1] ~= 'PROCESSING' or rec[2] ~= owner or rec[3] ~= token then
        return 'LOST'
    end
    redis.call('HSET', key, 'lease_until', lease_until)
    redis.call('PEXPIRE', key, gc_ttl)
    return 'OK'
end

local replies = {}
for i, key in ipairs(KEYS) do
    replies[i] = extend(key, ARGV[2 + i])
end
return replies
