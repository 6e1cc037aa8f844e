-- extend(KEYS[1] = claim key; ARGV: owner, token, lease_ms)
-- Reply (bulk string): "OK" (lease renewed) | "LOST" (not ours any more).
-- A handler that outlives its lease calls this so nobody takes its key over.
local key = KEYS[1]
local owner, token = ARGV[1], ARGV[2]
local lease_ms = tonumber(ARGV[3])
if not lease_ms or lease_ms <= 0 then
    return redis.error_reply('ERR extend.lua: lease_ms must be a positive number')
end

local rec = redis.call('HMGET', key, 'state', 'owner', 'token')
-- Owner and token both: after a takeover the same owner may hold a newer token.
if rec[1] ~= 'PROCESSING' or rec[2] ~= owner or rec[3] ~= token then
    return 'LOST'
end

local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', key, 'lease_until', string.format('%.0f', now_ms + lease_ms))
-- Same garbage-collection TTL rule as claim.lua.
redis.call('PEXPIRE', key, string.format('%.0f', math.max(4 * lease_ms, 60000)))
return 'OK'
