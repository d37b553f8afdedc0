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
local bd = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "breachd-dns-ffi.lua")
local res = bd.res
local NODATA, SINKHOLE, REDIRECT = bd.NODATA, bd.SINKHOLE, bd.REDIRECT

-- NOERROR with no record: the query turned into its own answer (its
-- rcode is already 0, NOERROR)
local function nodata(dq)
  dq.dh:setQR(true)
  return DNSAction.HeaderModify
end

local function breachd_dns_action(dq)
  local name = dq.qname:toString() -- with its trailing dot: the library takes it
  if not bd.check(name) then
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
  print(bd.stats())
end

addAction(AllRule(), LuaAction(breachd_dns_action))
