-- complete(KEYS[1..N] = claim keys; ARGV: owner, ttl_ms, then for each key in
-- KEYS order: token, result, final_state, fingerprint)
-- final_state: COMPLETED (result = the handler's result) or DEAD_LETTERED (result =
-- the reason). fingerprint: of the copy the key's dedup row was written for
-- (core/record_fingerprint.hpp), kept as field `fp` and answered by claim.lua
-- with DUPLICATE / DEAD_LETTERED; empty: none (kept as ''). Reply: an array with one entry per key, in KEYS order: the bulk
-- string "OK" | "LOST" (not ours any more, or no key), or an error reply in that
-- key's place (not a hash): that key only failed. A bad argument fails the whole
-- call before any key is touched.
-- One call takes many keys: on Redis Cluster they must share a slot (redis/claim_store.hpp).
local owner = ARGV[1]
local ttl_ms = tonumber(ARGV[2])
if #ARGV ~= 2 + 4 * #KEYS then
    return redis.error_reply('ERR complete.lua: expected ARGV owner, ttl_ms and '
                             .. 'token, result, final_state, fingerprint per key')
end
if not ttl_ms or ttl_ms <= 0 then
    return redis.error_reply('ERR complete.lua: ttl_ms must be a positive number')
end
for i = 1, #KEYS do
    local final_state = ARGV[4 * i + 1]
    if final_state ~= 'COMPLETED' and final_state ~= 'DEAD_LETTERED' then
        return redis.error_reply('ERR complete.lua: final_state must be COMPLETED or DEAD_LETTERED')
    end
end
local ttl = string.format('%.0f', ttl_ms)

-- One key, exactly as a call with that key alone would answer it.
local function complete(key, token, result, final_state, fp)
    -- pcall: a key that is not a hash fails alone instead of aborting the call.
    local rec = redis.pcall('HMGET', key, 'state', 'owner', 'token')
    if rec.err then return rec end
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
    -- One HSET and no HDEL: each redis.call is a command dispatch, and Redis's CPU per
    -- record is mostly these (docs/performance.md). lease_until stays behind, read
    -- only while PROCESSING (claim.lua, ops/claim_view.cpp); fp '' is "none" to claim.lua.
    redis.call('HSET', key, 'state', final_state, 'result', result, 'fp', fp)
    redis.call('PEXPIRE', key, ttl)
    return 'OK'
end

local replies = {}
for i, key in ipairs(KEYS) do
    local at = 4 * i - 1
    replies[i] = complete(key, ARGV[at], ARGV[at + 1], ARGV[at + 2], ARGV[at + 3])
end
return replies
