-- SPDX-License-Identifier: MIT
-- What the Lua hooks share (pdns-recursor.lua, dnsdist.lua, kresd.lua):
-- libbreachd-dns.so.1 through LuaJIT's FFI, opened once with
-- $BREACHD_CONFIG (docs/dns.md, libbreachd-dns(3)). Each hook loads it
-- from its own directory:
--   local bd = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "breachd-dns-ffi.lua")
local ffi = require("ffi")

ffi.cdef [[
typedef struct breachd_dns breachd_dns;
typedef struct breachd_dns_result {
    int verdict, reason, action;
    char category[33];
    char domain[254];
    char sinkhole4[16], sinkhole6[46];
    char redirect[254];
} breachd_dns_result;
breachd_dns *breachd_dns_open(const char *config_path, char *err, size_t errlen);
int breachd_dns_check(breachd_dns *h, const char *name, size_t len, breachd_dns_result *res);
size_t breachd_dns_stats(const breachd_dns *h, char *buf, size_t len);
]]

local lib = ffi.load("libbreachd-dns.so.1")
local err = ffi.new("char[512]")
-- one handle per process, whatever the number of Lua states: the library
-- hands every open of the same configuration the same one
local h = lib.breachd_dns_open(nil, err, 512)
if h == nil then
  error("breachd-dns: " .. ffi.string(err))
end

local bd = {
  BLOCK = 1, NODATA = 1, SINKHOLE = 2, REDIRECT = 3, -- verdict; actions (breachd-dns.h)
  res = ffi.new("breachd_dns_result"),
}

-- true when name (presentation form) is blocked; bd.res holds the answer
function bd.check(name)
  return lib.breachd_dns_check(h, name, #name, bd.res) == bd.BLOCK
end

function bd.str(field)
  return ffi.string(field)
end

-- the library's counters, "NAME VALUE" lines
function bd.stats()
  local buf = ffi.new("char[16384]")
  lib.breachd_dns_stats(h, buf, 16384)
  return ffi.string(buf)
end

return bd
