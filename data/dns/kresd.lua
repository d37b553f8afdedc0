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
local bd = dofile(debug.getinfo(1, 'S').source:match('^@(.*/)') .. 'breachd-dns-ffi.lua')
local res = bd.res
local NODATA, SINKHOLE, REDIRECT = bd.NODATA, bd.SINKHOLE, bd.REDIRECT

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
	if not bd.check(name) then
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
	return bd.stats()
end
