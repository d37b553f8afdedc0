-- SPDX-License-Identifier: MIT
-- breachd's URL blocklists in PowerDNS Recursor (4.8 and later, LuaJIT):
-- a lua-dns-script whose preresolve hook asks libbreachd-dns.so.1
-- through the FFI (docs/dns.md, libbreachd-dns(3)). Settings come from the
-- [dns] section of $BREACHD_CONFIG (default /etc/breachd/breachd.conf).
--
--   lua-dns-script=/usr/share/breachd/dns/pdns-recursor.lua
--   extended-resolution-errors=yes     # the Extended DNS Error (RFC 8914)
--
-- A blocked name gets its category's action (nxdomain, nodata, sinkhole,
-- redirect; log only counts) and EDE 15 (Blocked) with the category as its
-- extra text. Counters: the metrics breachd_dns_lookups, breachd_dns_blocked
-- and breachd_dns_blocked_CATEGORY (rec_control get-all, /metrics).
local ffi = require("ffi")
-- the recursor loads this file as a string, so its own directory is not
-- known: $BREACHD_DNS_LUA_DIR, else where the package installs it
local dir = os.getenv("BREACHD_DNS_LUA_DIR") or "/usr/share/breachd/dns"
local bd = dofile(dir .. "/breachd-dns-ffi.lua")
local res = bd.res
local NODATA, SINKHOLE, REDIRECT = bd.NODATA, bd.SINKHOLE, bd.REDIRECT
local EDE_BLOCKED = 15
local lookups = getMetric("breachd_dns_lookups")
local blocked = getMetric("breachd_dns_blocked")
local per_category = {}

local function count(category)
  local m = per_category[category]
  if not m then
    m = getMetric("breachd_dns_blocked_" .. category)
    per_category[category] = m
  end
  m:inc()
  blocked:inc()
end

-- the answer of a blocking action; false: answer as if unfiltered
local function answer(dq, category)
  local action = res.action
  dq.rcode = pdns.NOERROR
  if action == SINKHOLE then
    local a4, a6 = ffi.string(res.sinkhole4), ffi.string(res.sinkhole6)
    if dq.qtype == pdns.A and a4 ~= "" then
      dq:addAnswer(pdns.A, a4, 60)
    elseif dq.qtype == pdns.AAAA and a6 ~= "" then
      dq:addAnswer(pdns.AAAA, a6, 60)
    end
  elseif action == REDIRECT and res.redirect[0] ~= 0 then
    dq:addAnswer(pdns.CNAME, ffi.string(res.redirect), 60)
    dq.followupFunction = "followCNAMERecords"
  elseif action ~= NODATA then
    dq.rcode = pdns.NXDOMAIN
  end
  dq.extendedErrorCode = EDE_BLOCKED
  dq.extendedErrorExtra = category
  return true
end

function preresolve(dq)
  local name = dq.qname:toStringNoDot()
  lookups:inc()
  if not bd.check(name) then
    return false
  end
  local category = ffi.string(res.category)
  count(category)
  return answer(dq, category)
end
