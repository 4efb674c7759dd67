"""Lua scripts of the Redis KV store: each write is one script, so it is atomic.

Key layout under the prefix ``P`` (``ARGV[1]`` of every script):

- ``P:rev``                       store-wide revision counter (``INCR``)
- ``P:feed``                      change feed, a stream whose entry ids are ``{revision}-0``
- ``P:o:{kind}:{part}``           one hash per kind and part (``rev``, ``meta``, ``spec``,
                                  ``status``); field = object name, value = revision or JSON
- ``P:c:{kind}:{name}``           set of the object's children, ``{kind}/{name}``

``meta`` is the object's metadata without its revision (name, parent). Keys are built
inside the scripts from the prefix, which a single Redis server allows (not Redis
Cluster). Scripts reply with a status word first (``ok``, ``exists``, ``noparent``,
``missing``, ``conflict``) so the Python side maps outcomes to typed errors.
"""

from __future__ import annotations

__all__ = ["CREATE", "UPDATE", "DELETE", "GET", "LIST"]

# ARGV[1] = prefix, ARGV[2] = feed MAXLEN (approximate) for the writing scripts.
_PRELUDE = """
local P = ARGV[1]
local function okey(kind, part) return P .. ':o:' .. kind .. ':' .. part end
local function ckey(kind, name) return P .. ':c:' .. kind .. ':' .. name end
local function feed(rev, kind, name, typ, orev, meta, spec, status)
  redis.call('XADD', P .. ':feed', 'MAXLEN', '~', ARGV[2], rev .. '-0',
    'kind', kind, 'name', name, 'type', typ, 'orev', orev,
    'meta', meta, 'spec', spec, 'status', status)
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
UPDATE = (
    _PRELUDE
    + """
local kind, name, part, value, expected = ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
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
"""
)

# ARGV: prefix, maxlen, kind, name, expected ('' = any)
DELETE = (
    _PRELUDE
    + """
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
local last = remove(kind, name)
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
