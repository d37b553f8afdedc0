-- SPDX-License-Identifier: MIT
-- breachd's URL blocklists in Knot Resolver (5.6 and later): a policy rule
-- that asks libbreachd-dns.so.1 through LuaJIT's FFI (docs/dns.md,
-- libbreachd-dns(3)). In kresd.conf, before the other policy rules:
--
--   dofile('/usr/share/breachd/dns/kresd.lua')
--
-- Settings come from the [dns] section of $BREACHD_CONFIG. A blocked name
-- gets its category's action (nxdomain, nodata, sinkhole, redirect: a
-- CNAME to [dns] redirect, which the client follows; log only counts) and
-- Extended DNS Error 15 (Blocked) with the category as its extra text. The
-- counters are the library's: breachd_dns_stats() in the control socket.
local ffi = require('ffi')

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

local lib = ffi.load('libbreachd-dns.so.1')
local BLOCK, NODATA, SINKHOLE, REDIRECT = 1, 1, 2, 3
local err = ffi.new('char[512]')
local h = lib.breachd_dns_open(nil, err, 512)
if h == nil then
	error('breachd-dns: ' .. ffi.string(err))
end
local res = ffi.new('breachd_dns_result')

-- A NOERROR answer of our own (policy.ANSWER would mark it EDE 4, Forged,
-- which outranks Blocked): rdata[qtype] when there is one, else a CNAME
-- to cname when set (kresd does not chase a policy's own), else no record.
local function forge(rdata, cname)
	return function(_, req)
		local qry = req:current()
		local answer = req:ensure_answer()
		if answer == nil then return nil end
		ffi.C.kr_pkt_make_auth_header(answer)
		answer:rcode(kres.rcode.NOERROR)
		answer:begin(kres.section.ANSWER)
		if rdata[qry.stype] then
			answer:put(qry.sname, 60, qry.sclass, qry.stype, rdata[qry.stype])
		elseif cname then
			answer:put(qry.sname, 60, qry.sclass, kres.type.CNAME, cname)
		end
		return kres.DONE
	end
end

-- the actions, made once per setting (a sinkhole pair, a redirect host)
local made = {}
local function action_of(r)
	local a = r.action
	local key = a .. ' ' .. ffi.string(r.sinkhole4) .. ' ' .. ffi.string(r.sinkhole6) ..
		' ' .. ffi.string(r.redirect)
	if made[key] then return made[key] end
	local act = policy.DENY
	if a == SINKHOLE then
		local t = {}
		if r.sinkhole4[0] ~= 0 then t[kres.type.A] = kres.str2ip(ffi.string(r.sinkhole4)) end
		if r.sinkhole6[0] ~= 0 then t[kres.type.AAAA] = kres.str2ip(ffi.string(r.sinkhole6)) end
		act = forge(t)
	elseif a == REDIRECT and r.redirect[0] ~= 0 then
		act = forge({}, kres.str2dname(ffi.string(r.redirect) .. '.'))
	elseif a == NODATA then
		act = forge({})
	end
	made[key] = act
	return act
end

policy.add(function(_, query)
	local name = kres.dname2str(query:name())
	if lib.breachd_dns_check(h, name, #name, res) ~= BLOCK then
		return nil
	end
	local act, category = action_of(res), ffi.string(res.category)
	-- the EDE first: kresd keeps the first of equal rank, and the policy
	-- actions set their own
	return function(state, req)
		req:set_extended_error(kres.extended_error.BLOCKED, category)
		return act(state, req)
	end
end)

function breachd_dns_stats()
	local buf = ffi.new('char[16384]')
	lib.breachd_dns_stats(h, buf, 16384)
	return ffi.string(buf)
end
