"""Lua scripts of the Redis KV store: each write is one script, so it is atomic.

Key layout under the prefix ``P`` (``ARGV[1]`` of every script):

- ``P:rev``                       store-wide revision counter (``INCR``)
- ``P:feed``                      change feed, a stream whose entry ids are ``{revision}-0``
- ``P:o:{kind}:{part}``           one hash per kind and part (``rev``, ``meta``, ``spec``,
                                  ``status``); field = object name, value = revision or JSON
- ``P:c:{kind}:{name}``           set of the object's children, ``{kind}/{name}``
- ``P:grp:{group}:own``           a consumer group's owner map (``sc.kv.groups``):
                                  ``{topic}/{partition}`` -> ``{member_id}|{grant_epoch}``
- ``P:grp:{group}:off``           its offsets: ``{topic}/{partition}`` ->
                                  ``{offset}|{grant_epoch}|{ts_ms}|{metadata}``
- ``P:lease``                     the active-SC lease (``sc.lease``): ``{token}|{holder}``,
                                  with a TTL (``PX``)
- ``P:lease:token``               the last fencing token issued (``INCR``; never expires)
- ``P:store-id``                  the identity of the store's data (``SET NX``: the
                                  first active SC after the data was lost names it)
- ``P:tombstones``                sorted set of deleted partitions' uids, scored by the
                                  time of deletion (``sc.rebuild``)
- ``P:tgrp:{topic}``              set of the groups that may hold a grant or an offset on
                                  the topic (a superset), so deleting a partition finds
                                  them; not under ``P:grp:`` where a group named like a
                                  topic index would collide with it

Every writing script takes the writer's fencing token before the prefix (``''``:
unfenced) and refuses with ``{'deposed', last}`` before it changes anything when the
token is not ``P:lease:token``; the other arguments keep their positions, because the
prelude removes the token from ``ARGV``. Feed entries record the token (``fence``), so
one can check which SC wrote each change.

``meta`` is the object's metadata without its revision (name, parent). Keys are built
inside the scripts from the prefix, which a single Redis server allows (not Redis
Cluster). Scripts reply with a status word first (``ok``, ``exists``, ``noparent``,
``missing``, ``conflict``, ``busy``, ``unknown``) so the Python side maps outcomes to
typed errors. Loops write one field per call: ``unpack`` of thousands of arguments
would overflow Lua's stack.
"""

from __future__ import annotations

__all__ = [
    "CREATE",
    "UPDATE",
    "DELETE",
    "GET",
    "LIST",
    "PUBLISH_PLAN",
    "COMMIT",
    "WRITE_OFFSETS",
    "DELETE_OFFSETS",
    "STORE_ID",
    "ADD_TOMBSTONES",
    "CLAIM_LEASE",
    "RENEW_LEASE",
    "RELEASE_LEASE",
]

# ARGV[1] = fencing token ('' = unfenced), removed here; then ARGV[1] = prefix,
# ARGV[2] = feed MAXLEN (approximate) for the writing scripts.
_PRELUDE = """
local FENCE = table.remove(ARGV, 1)
local P = ARGV[1]
if FENCE ~= '' then
  local last = redis.call('GET', P .. ':lease:token') or '0'
  if last ~= FENCE then return {'deposed', last} end
end
local function okey(kind, part) return P .. ':o:' .. kind .. ':' .. part end
local function ckey(kind, name) return P .. ':c:' .. kind .. ':' .. name end
local function gkey(group, what) return P .. ':grp:' .. group .. ':' .. what end
local function tkey(topic) return P .. ':tgrp:' .. topic end
local function topic_of(field) return string.match(field, '^(.*)/') end
local function feed(rev, kind, name, typ, orev, meta, spec, status)
  redis.call('XADD', P .. ':feed', 'MAXLEN', '~', ARGV[2], rev .. '-0',
    'kind', kind, 'name', name, 'type', typ, 'orev', orev,
    'meta', meta, 'spec', spec, 'status', status, 'fence', FENCE)
end
local function write_part(kind, name, part, value, expected)
  local cur = redis.call('HGET', okey(kind, 'rev'), name)
  if not cur then return {'missing'} end
  if expected ~= '' and cur ~= expected then return {'conflict', cur} end
  local rev = redis.call('INCR', P .. ':rev')
  redis.call('HSET', okey(kind, part), name, value)
  redis.call('HSET', okey(kind, 'rev'), name, rev)
  local meta = redis.call('HGET', okey(kind, 'meta'), name)
  local spec = redis.call('HGET', okey(kind, 'spec'), name)
  local status = redis.call('HGET', okey(kind, 'status'), name)
  feed(rev, kind, name, 'MODIFIED', rev, meta, spec, status)
  return {'ok', rev, meta, spec, status}
end
"""

# ARGV: prefix, maxlen, kind, name, meta, spec, status, parent kind, parent name
CREATE = (
    _PRELUDE
    + """
local kind, name, meta, spec, status = ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local pkind, pname = ARGV[8], ARGV[9]
if redis.call('HEXISTS', okey(kind, 'rev'), name) == 1 then return {'exists'} end
if pkind ~= '' then
  if redis.call('HEXISTS', okey(pkind, 'rev'), pname) == 0 then return {'noparent'} end
  redis.call('SADD', ckey(pkind, pname), kind .. '/' .. name)
end
local rev = redis.call('INCR', P .. ':rev')
redis.call('HSET', okey(kind, 'rev'), name, rev)
redis.call('HSET', okey(kind, 'meta'), name, meta)
redis.call('HSET', okey(kind, 'spec'), name, spec)
redis.call('HSET', okey(kind, 'status'), name, status)
feed(rev, kind, name, 'ADDED', rev, meta, spec, status)
return {'ok', rev}
"""
)

# ARGV: prefix, maxlen, kind, name, part ('spec' | 'status'), value, expected ('' = any)
UPDATE = _PRELUDE + "return write_part(ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7])\n"

# ARGV: prefix, maxlen, kind, name, expected ('' = any), group ('1': the object is a
# consumer group, refused while it holds grants, its data deleted with it), partition
# kind, topic kind
DELETE = (
    _PRELUDE
    + """
local group, pkind, tkind = ARGV[6], ARGV[7], ARGV[8]
local function purge_partition(name)
  -- the partition's grant and offset go from every group that may hold one
  local topic, index = string.match(name, '^(.*)-(%d+)$')
  if not topic then return end
  local field = topic .. '/' .. index
  for _, g in ipairs(redis.call('SMEMBERS', tkey(topic))) do
    redis.call('HDEL', gkey(g, 'own'), field)
    redis.call('HDEL', gkey(g, 'off'), field)
  end
end
local function purge_group(name)
  for _, what in ipairs({'own', 'off'}) do
    for _, field in ipairs(redis.call('HKEYS', gkey(name, what))) do
      redis.call('SREM', tkey(topic_of(field)), name)
    end
    redis.call('DEL', gkey(name, what))
  end
end
local function remove(kind, name)
  -- children first: once the parent's DELETED is in the feed, its children are gone
  local members = redis.call('SMEMBERS', ckey(kind, name))
  table.sort(members)
  for _, member in ipairs(members) do
    local sep = string.find(member, '/', 1, true)
    local ckind, cname = string.sub(member, 1, sep - 1), string.sub(member, sep + 1)
    if redis.call('HEXISTS', okey(ckind, 'rev'), cname) == 1 then remove(ckind, cname) end
  end
  redis.call('DEL', ckey(kind, name))
  local orev = redis.call('HGET', okey(kind, 'rev'), name)
  local meta = redis.call('HGET', okey(kind, 'meta'), name)
  local spec = redis.call('HGET', okey(kind, 'spec'), name)
  local status = redis.call('HGET', okey(kind, 'status'), name)
  local parent = cjson.decode(meta).parent
  if type(parent) == 'table' then
    redis.call('SREM', ckey(parent.kind, parent.name), kind .. '/' .. name)
  end
  if kind == pkind then
    purge_partition(name)
  elseif kind == tkind then
    redis.call('DEL', tkey(name))  -- after its partitions, whose purge reads it
  end
  for _, part in ipairs({'rev', 'meta', 'spec', 'status'}) do
    redis.call('HDEL', okey(kind, part), name)
  end
  local rev = redis.call('INCR', P .. ':rev')
  feed(rev, kind, name, 'DELETED', orev, meta, spec, status)
  return {orev, meta, spec, status}
end
local kind, name, expected = ARGV[3], ARGV[4], ARGV[5]
local cur = redis.call('HGET', okey(kind, 'rev'), name)
if not cur then return {'missing'} end
if expected ~= '' and cur ~= expected then return {'conflict', cur} end
if group ~= '' and redis.call('HLEN', gkey(name, 'own')) > 0 then return {'busy'} end
local last = remove(kind, name)
if group ~= '' then purge_group(name) end
return {'ok', last[1], last[2], last[3], last[4]}
"""
)

# ARGV: prefix, kind, name -> {rev, meta, spec, status} or {}
GET = """
local P, kind, name = ARGV[1], ARGV[2], ARGV[3]
local base = P .. ':o:' .. kind .. ':'
local rev = redis.call('HGET', base .. 'rev', name)
if not rev then return {} end
return {rev, redis.call('HGET', base .. 'meta', name), redis.call('HGET', base .. 'spec', name),
        redis.call('HGET', base .. 'status', name)}
"""

# ARGV: prefix, kind... -> {revision, {name, rev, meta, spec, status, ...} per kind}
LIST = """
local P = ARGV[1]
local out = {tonumber(redis.call('GET', P .. ':rev') or '0')}
for i = 2, #ARGV do
  local base = P .. ':o:' .. ARGV[i] .. ':'
  local revs = redis.call('HGETALL', base .. 'rev')
  local rows = {}
  for j = 1, #revs, 2 do
    local name = revs[j]
    rows[#rows + 1] = name
    rows[#rows + 1] = revs[j + 1]
    rows[#rows + 1] = redis.call('HGET', base .. 'meta', name)
    rows[#rows + 1] = redis.call('HGET', base .. 'spec', name)
    rows[#rows + 1] = redis.call('HGET', base .. 'status', name)
  end
  out[#out + 1] = rows
end
return out
"""

# -- consumer groups (``sc.kv.groups``) ---------------------------------------------

# ARGV: prefix, maxlen, kind, name, status, expected, then owner pairs (field, value):
# the status write of UPDATE and the whole owner map, replaced, in one step.
PUBLISH_PLAN = (
    _PRELUDE
    + """
local name = ARGV[4]
local reply = write_part(ARGV[3], name, 'status', ARGV[5], ARGV[6])
if reply[1] ~= 'ok' then return reply end
local own = gkey(name, 'own')
redis.call('DEL', own)
local seen, topics = {}, {}
for i = 7, #ARGV, 2 do
  redis.call('HSET', own, ARGV[i], ARGV[i + 1])
  local topic = topic_of(ARGV[i])
  if not seen[topic] then seen[topic] = true; topics[#topics + 1] = topic end
end
for _, topic in ipairs(topics) do redis.call('SADD', tkey(topic), name) end
return reply
"""
)

# ARGV: prefix, group, member id, partition kind, then per commit: field, encoded value
# (which starts with ``{offset}|{grant_epoch}|``) -> per commit: outcome
# (``CommitOutcome``), the stored offset afterwards ('' = none). Offsets are decimal
# strings without leading zeros, compared by length then lexically: exact where Lua's
# doubles are not. Two arguments per partition: packing them is most of the client cost.
COMMIT = (
    _PRELUDE
    + """
local group, member, pkind = ARGV[2], ARGV[3], ARGV[4]
local own, off, parts = gkey(group, 'own'), gkey(group, 'off'), okey(pkind, 'rev')
local function ge(a, b)
  if #a ~= #b then return #a > #b end
  return a >= b
end
local out = {}
for i = 5, #ARGV, 2 do
  local field, value = ARGV[i], ARGV[i + 1]
  local topic, index = string.match(field, '^(.*)/(%d+)$')
  local offset, epoch = string.match(value, '^(%d+)|(%d*)|')
  local cur = redis.call('HGET', off, field)
  local stored = cur and string.match(cur, '^(%d+)|') or ''
  local outcome
  if redis.call('HEXISTS', parts, topic .. '-' .. index) == 0 then
    outcome = 'unknown_partition'
  elseif redis.call('HGET', own, field) ~= member .. '|' .. epoch then
    outcome = 'fenced'
  elseif cur and not ge(offset, stored) then
    outcome = 'backwards'
  else
    redis.call('HSET', off, field, value)
    redis.call('SADD', tkey(topic), group)
    outcome, stored = 'accepted', offset
  end
  out[#out + 1] = outcome
  out[#out + 1] = stored
end
return out
"""
)

# ARGV: prefix, group kind, group, partition kind, then per partition: topic,
# partition, encoded value. All or nothing; refused while the group holds grants.
WRITE_OFFSETS = (
    _PRELUDE
    + """
local kind, group, pkind = ARGV[2], ARGV[3], ARGV[4]
if redis.call('HEXISTS', okey(kind, 'rev'), group) == 0 then return {'missing'} end
if redis.call('HLEN', gkey(group, 'own')) > 0 then return {'busy'} end
for i = 5, #ARGV, 3 do
  if redis.call('HEXISTS', okey(pkind, 'rev'), ARGV[i] .. '-' .. ARGV[i + 1]) == 0 then
    return {'unknown', ARGV[i], ARGV[i + 1]}
  end
end
local off = gkey(group, 'off')
for i = 5, #ARGV, 3 do
  redis.call('HSET', off, ARGV[i] .. '/' .. ARGV[i + 1], ARGV[i + 2])
  redis.call('SADD', tkey(ARGV[i]), group)
end
return {'ok'}
"""
)

# ARGV: prefix, group, topic ('' = every topic) -> {'ok', count} or {'busy'}
DELETE_OFFSETS = (
    _PRELUDE
    + """
local group, topic = ARGV[2], ARGV[3]
local function wanted(field) return topic == '' or topic_of(field) == topic end
for _, field in ipairs(redis.call('HKEYS', gkey(group, 'own'))) do
  if wanted(field) then return {'busy'} end
end
local off, count = gkey(group, 'off'), 0
for _, field in ipairs(redis.call('HKEYS', off)) do
  if wanted(field) then
    redis.call('HDEL', off, field)
    redis.call('SREM', tkey(topic_of(field)), group)  -- no grant on it either
    count = count + 1
  end
end
return {'ok', count}
"""
)

# -- the store's identity and tombstones (``sc.rebuild``) ----------------------------

# ARGV: prefix, a fresh id -> {'ok', id}: the stored id, set to the fresh one if none.
STORE_ID = (
    _PRELUDE
    + """
local key = P .. ':store-id'
redis.call('SET', key, ARGV[2], 'NX')
return {'ok', redis.call('GET', key)}
"""
)

# ARGV: prefix, score (seconds), how many to keep, then the uids -> {'ok'}. Every uid
# gets the same score; the newest ``keep`` members stay.
ADD_TOMBSTONES = (
    _PRELUDE
    + """
local key, now, keep = P .. ':tombstones', ARGV[2], tonumber(ARGV[3])
for i = 4, #ARGV do redis.call('ZADD', key, now, ARGV[i]) end
redis.call('ZREMRANGEBYRANK', key, 0, -(keep + 1))
return {'ok'}
"""
)

# -- the active-SC lease (``sc.lease``: these mirror ``claim`` and ``renew``) -----------

_LEASE = """
local P = ARGV[1]
local function holder_of(value) return string.match(value, '^(%d+)|(.*)$') end
"""

# ARGV: prefix, holder, ttl ms -> {'ok', token} or {'held', token, holder}
CLAIM_LEASE = (
    _LEASE
    + """
local holder, ttl = ARGV[2], ARGV[3]
local cur = redis.call('GET', P .. ':lease')
if cur then
  local token, who = holder_of(cur)
  if who ~= holder then return {'held', token, who} end
end
local token = redis.call('INCR', P .. ':lease:token')
redis.call('SET', P .. ':lease', token .. '|' .. holder, 'PX', ttl)
return {'ok', tostring(token)}
"""
)

# ARGV: prefix, token, holder, ttl ms -> {'ok', token} or {'lost', token, holder}
RENEW_LEASE = (
    _LEASE
    + """
local token, holder, ttl = ARGV[2], ARGV[3], ARGV[4]
local mine = token .. '|' .. holder
local cur = redis.call('GET', P .. ':lease')
local last = redis.call('GET', P .. ':lease:token') or '0'
if cur == mine or (not cur and last == token) then
  redis.call('SET', P .. ':lease', mine, 'PX', ttl)
  return {'ok', token}
end
if not cur then return {'lost', last, ''} end
local other, who = holder_of(cur)
return {'lost', other, who}
"""
)

# ARGV: prefix, token -> 1 when the record was this token's and is gone
RELEASE_LEASE = (
    _LEASE
    + """
local cur = redis.call('GET', P .. ':lease')
if cur and holder_of(cur) == ARGV[2] then
  redis.call('DEL', P .. ':lease')
  return 1
end
return 0
"""
)
