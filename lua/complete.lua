-- complete(KEYS[1] = claim key; ARGV: owner, token, result, ttl_ms, final_state)
-- final_state: COMPLETED (result = the handler's result) or DEAD_LETTERED (result =
-- the reason). Reply (bulk string): "OK" | "LOST" (not ours any more, or no key).
local key = KEYS[1]
local owner, token, result, final_state = ARGV[1], ARGV[2], ARGV[3], ARGV[5]
local ttl_ms = tonumber(ARGV[4])
if not ttl_ms or ttl_ms <= 0 then
    return redis.error_reply('ERR complete.lua: ttl_ms must be a positive number')
end
if final_state ~= 'COMPLETED' and final_state ~= 'DEAD_LETTERED' then
    return redis.error_reply('ERR complete.lua: final_state must be COMPLETED or DEAD_LETTERED')
end

local rec = redis.call('HMGET', key, 'state', 'owner', 'token')
if rec[2] ~= owner or rec[3] ~= token then
    return 'LOST'
end
-- Already done by this very claim: a retry of a complete whose reply was lost.
if rec[1] == final_state then
    return 'OK'
end
if rec[1] ~= 'PROCESSING' then
    return 'LOST'
end

-- The token stays so a later takeover (after the TTL) still hands out a higher one.
redis.call('HSET', key, 'state', final_state, 'result', result)
redis.call('HDEL', key, 'lease_until')
redis.call('PEXPIRE', key, string.format('%.0f', ttl_ms))
return 'OK'
