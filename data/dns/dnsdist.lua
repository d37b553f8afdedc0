-- SPDX-License-Identifier: MIT
-- breachd's URL blocklists in dnsdist (1.7 and later, LuaJIT): an action
-- on every query that asks libbreachd-dns.so.1 through the FFI
-- (docs/dns.md, libbreachd-dns(3)). In dnsdist.conf:
--
--   dofile("/usr/share/breachd/dns/dnsdist.lua")
--
-- Settings come from the [dns] section of $BREACHD_CONFIG. A blocked name
-- gets its category's action: nxdomain, nodata, sinkhole (A/AAAA), redirect
-- (a CNAME to [dns] redirect, which the client follows); log only counts.
-- dnsdist 1.7 has neither Extended DNS Errors nor custom metrics: the
-- counters are the library's (breachd_dns_stats), printed by
-- breachdDnsStats() in the console.
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
local BLOCK, NODATA, SINKHOLE, REDIRECT = 1, 1, 2, 3
local err = ffi.new("char[512]")
local h = lib.breachd_dns_open(nil, err, 512)
if h == nil then
  error("breachd-dns: " .. ffi.string(err))
end
local res = ffi.new("breachd_dns_result")

-- NOERROR with no record: the query turned into its own answer (its
-- rcode is already 0, NOERROR)
local function nodata(dq)
  dq.dh:setQR(true)
  return DNSAction.HeaderModify
end

local function breachd_dns_action(dq)
  local name = dq.qname:toString() -- with its trailing dot: the library takes it
  if lib.breachd_dns_check(h, name, #name, res) ~= BLOCK then
    return DNSAction.None
  end
  local action = res.action
  if action == SINKHOLE then
    if dq.qtype == DNSQType.A and res.sinkhole4[0] ~= 0 then
      return DNSAction.Spoof, ffi.string(res.sinkhole4)
    elseif dq.qtype == DNSQType.AAAA and res.sinkhole6[0] ~= 0 then
      return DNSAction.Spoof, ffi.string(res.sinkhole6)
    end
    return nodata(dq)
  elseif action == REDIRECT and res.redirect[0] ~= 0 then
    return DNSAction.Spoof, ffi.string(res.redirect) .. "."
  elseif action == NODATA then
    return nodata(dq)
  end
  return DNSAction.Nxdomain
end

function breachdDnsStats()
  local buf = ffi.new("char[16384]")
  lib.breachd_dns_stats(h, buf, 16384)
  print(ffi.string(buf))
end

addAction(AllRule(), LuaAction(breachd_dns_action))
