// The Lua side of mod_lua's request API (httpd's lua_request.c and lua_vmprep.c's apache2
// module): the `r` object as a table whose metatable forwards fields and methods to the
// JavaScript bridge, header/notes/env tables with __index/__newindex/__pairs, the apache2
// constants, and the drivers the module calls (handler/hook invocation, filter coroutines).
// Run once in every new Lua state.

export const LUA_PRELUDE = String.raw`
local P_get, P_set, P_call, P_async = __p_get, __p_set, __p_call, __p_async
local P_tget, P_tset, P_tpairs, P_log = __p_tget, __p_tset, __p_tpairs, __p_log
__p_get, __p_set, __p_call, __p_async, __p_tget, __p_tset, __p_tpairs, __p_log = nil, nil, nil, nil, nil, nil, nil, nil
local unpack = table.unpack

local apache2 = {
  OK = 0, DECLINED = -1, DONE = -2,
  HTTP_MOVED_TEMPORARILY = 302,
  PROXYREQ_NONE = 0, PROXYREQ_PROXY = 1, PROXYREQ_REVERSE = 2, PROXYREQ_RESPONSE = 3,
  AUTHZ_DENIED = 0, AUTHZ_GRANTED = 1, AUTHZ_NEUTRAL = 2, AUTHZ_GENERAL_ERROR = 3, AUTHZ_DENIED_NO_USER = 4,
}
apache2.version = P_get(0, 'banner')
_G.apache2 = apache2
package.loaded.apache2 = apache2

function __plume_paths(which, list)
  package[which] = list .. ';' .. package[which]
end

local TABLES = { headers_in = true, headers_out = true, err_headers_out = true, notes = true, subprocess_env = true }

local function mktable(id, which)
  return setmetatable({}, {
    __index = function(_, k) return P_tget(id, which, k) end,
    __newindex = function(_, k, v) P_tset(id, which, k, v) end,
    __pairs = function() return next, P_tpairs(id, which), nil end,
  })
end

-- Results of the bridge come as {count, values...}: several values, nils included.
local function ret(t)
  if t == nil then return end
  return unpack(t, 2, t[1] + 1)
end

local M = {}
local SYNC = {
  'parseargs', 'escape_html', 'escape', 'unescape', 'base64_encode', 'base64_decode', 'md5', 'sha1',
  'setcookie', 'getcookie', 'expr', 'clock', 'stat', 'regex', 'construct_url', 'ssl_var_lookup',
  'add_output_filter', 'add_input_filter', 'get_direntries', 'htpassword', 'mkdir', 'mkrdir', 'rmdir', 'touch',
  'date_parse_rfc', 'set_document_root', 'set_context_info', 'os_escape_path', 'escape_logitem',
  'strcmp_match', 'set_keepalive', 'make_etag', 'mpm_query', 'module_info', 'loaded_modules',
  'runtime_dir_relative', 'server_info', 'state_query', 'custom_response', 'exists_config_define',
  'headers_in_table', 'headers_out_table', 'err_headers_out_table', 'notes_table', 'subprocess_env_table',
  'sendfile', 'internal_redirect', 'wsupgrade',
}
for _, name in ipairs(SYNC) do
  M[name] = function(self, ...) return ret(P_call(rawget(self, '__id'), name, ...)) end
end
M.regex = function(self, ...)
  local t, e = ret(P_call(rawget(self, '__id'), 'regex', ...))
  if type(t) ~= 'table' then return t, e end
  local out = {}
  for i = 1, #t do out[i - 1] = t[i] end
  return out
end
local ASYNC = { 'parsebody', 'requestbody', 'sleep', 'usleep', 'wsread', 'wswrite', 'wsping', 'wsclose', 'flush' }
for _, name in ipairs(ASYNC) do
  M[name] = function(self, ...) return ret(P_async(rawget(self, '__id'), name, ...):await()) end
end
-- Output waits only when the connection pushes back.
local function out(name)
  return function(self, ...)
    local p = P_call(rawget(self, '__id'), name, ...)
    if p ~= nil then p:await() end
  end
end
M.puts = out('puts')
M.write = out('write')
local LEVELS = { emerg = 0, alert = 1, crit = 2, err = 3, warn = 4, notice = 5, info = 6, debug = 7,
  trace1 = 8, trace2 = 9, trace3 = 10, trace4 = 11, trace5 = 12, trace6 = 13, trace7 = 14, trace8 = 15 }
for name, level in pairs(LEVELS) do
  M[name] = function(self, msg)
    if type(msg) ~= 'string' and type(msg) ~= 'number' then
      error("bad argument #2 to '" .. name .. "' (string expected, got " .. type(msg) .. ")", 2)
    end
    local d = debug.getinfo(2, 'Sl')
    P_log(rawget(self, '__id'), level, d and d.source or '', d and d.currentline or 0, tostring(msg))
  end
end

local RMT = {
  __index = function(self, k)
    local m = M[k]
    if m ~= nil then return m end
    local id = rawget(self, '__id')
    if TABLES[k] then
      local t = mktable(id, k)
      rawset(self, k, t)
      return t
    end
    return P_get(id, k)
  end,
  __newindex = function(self, k, v)
    P_set(rawget(self, '__id'), k, v)
  end,
  __tostring = function() return 'request_rec' end,
}

local function mkreq(id)
  return setmetatable({ __id = id }, RMT)
end

-- A handler or hook: the named global called with r (and the extra arguments).
function __plume_invoke(fname, id, ...)
  local f = _G[fname]
  if type(f) ~= 'function' then return '\1nofunc' end
  local v = f(mkreq(id), ...)
  if math.type(v) ~= nil then return v end
  if type(v) == 'string' and tonumber(v) ~= nil then return math.tointeger(tonumber(v)) or tonumber(v) end
  return nil
end

-- Filters: the named global run as a coroutine, the global 'bucket' set before each resume.
local filters = {}
function __plume_filter_start(key, fname, id)
  local f = _G[fname]
  if type(f) ~= 'function' then return { 'nofunc' } end
  local co = coroutine.create(f)
  local ok, v = coroutine.resume(co, mkreq(id))
  if not ok then return { 'error', tostring(v) } end
  if coroutine.status(co) ~= 'suspended' then return { 'declined' } end
  filters[key] = co
  return { 'yield', v ~= nil and tostring(v) or '' }
end
function __plume_filter_resume(key, data)
  local co = filters[key]
  if co == nil then return { 'dead' } end
  bucket = data
  local ok, v = coroutine.resume(co)
  if not ok then filters[key] = nil; return { 'error', tostring(v) } end
  if coroutine.status(co) ~= 'suspended' then filters[key] = nil; return { 'dead' } end
  return { 'yield', v ~= nil and tostring(v) or '' }
end
function __plume_filter_end(key)
  filters[key] = nil
end
`;
