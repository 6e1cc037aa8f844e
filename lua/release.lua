-- release(KEYS[1..N] = claim keys; ARGV: owner, then one token per key in KEYS order)
-- Reply: an array with one entry per key, in KEYS order: the bulk string "OK"
-- (claim deleted) | "LOST" (not ours any more, or no key), or an error reply in
-- that key's place (not a hash): that key only failed. A bad argument fails the
-- whole call before any key is touched.
-- After a failure or a revoke, so the next try need not wait for the lease to pass.
-- One call takes many keys: on Redis Cluster they must share a slot (redis/claim_store.hpp).
local owner = ARGV[1]
if #ARGV ~= 1 + #KEYS then
    return redis.error_reply('ERR release.lua: expected ARGV owner and a token per key')
end

-- One key, exactly as a call with that key alone would answer it.
local function release(key, token)
    -- pcall: a key that is not a hash fails alone instead of aborting the call.
    local rec = redis.pcall('HMGET', key, 'state', 'owner', 'token')
    if rec.err then return rec end
    if rec[1] ~= 'PROCESSING' or rec[2] ~= owner or rec[3] ~= token then
        return 'LOST'
    end
    redis.call('DEL', key)
    return 'OK'
end

local replies = {}
for i, key in ipairs(KEYS) do
    replies[i] = release(key, ARGV[1 + i])
end
return replies
