# SPDX-License-Identifier: MIT
"""breachd's URL blocklists in unbound (1.17 and later): a python module
that asks libbreachd-dns.so.1 through ctypes (docs/dns.md,
libbreachd-dns(3)). Settings come from the [dns] section of
$BREACHD_CONFIG (default /etc/breachd/breachd.conf).

    server:
        module-config: "python validator iterator"   # or "python iterator"
    python:
        python-script: "/usr/share/breachd/dns/unbound.py"

A blocked name gets its category's action (nxdomain, nodata, sinkhole,
redirect; log only counts). No Extended DNS Error: unbound 1.17 sends none
of a python module's EDNS options with the module's own answer (tried: the
qstate's edns_opts_front_out and a reply callback's opt_list_out). Counters: the
library's (breachd_dns_stats), written every minute to the file named by
$BREACHD_DNS_STATS (default: none) and logged at verbosity 2."""
import ctypes
import os
import time

BLOCK, NODATA, SINKHOLE, REDIRECT = 1, 1, 2, 3


class Result(ctypes.Structure):
    _fields_ = [("verdict", ctypes.c_int), ("reason", ctypes.c_int), ("action", ctypes.c_int),
                ("category", ctypes.c_char * 33), ("domain", ctypes.c_char * 254),
                ("sinkhole4", ctypes.c_char * 16), ("sinkhole6", ctypes.c_char * 46),
                ("redirect", ctypes.c_char * 254)]


_lib = None
_h = None
_stats_at = 0.0


def init_standard(id, env):
    global _lib, _h
    _lib = ctypes.CDLL("libbreachd-dns.so.1")
    _lib.breachd_dns_open.restype = ctypes.c_void_p
    _lib.breachd_dns_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    _lib.breachd_dns_check.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                       ctypes.POINTER(Result)]
    _lib.breachd_dns_stats.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    _lib.breachd_dns_stats.restype = ctypes.c_size_t
    _lib.breachd_dns_close.argtypes = [ctypes.c_void_p]
    err = ctypes.create_string_buffer(512)
    _h = _lib.breachd_dns_open(None, err, 512)
    if not _h:
        log_err("breachd-dns: " + err.value.decode(errors="replace"))
        return False
    return True


def deinit(id):
    global _h
    if _h:
        _lib.breachd_dns_close(_h)
        _h = None
    return True


def inform_super(id, qstate, superqstate, qdata):
    return True


def _write_stats():
    global _stats_at
    now = time.monotonic()
    if now - _stats_at < 60:
        return
    _stats_at = now
    buf = ctypes.create_string_buffer(16384)
    _lib.breachd_dns_stats(_h, buf, len(buf))
    text = buf.value.decode()
    verbose(VERB_DETAIL, "breachd-dns: " + text.replace("\n", " "))
    path = os.environ.get("BREACHD_DNS_STATS")
    if path:
        tmp = path + ".new"
        with open(tmp, "w") as f:
            f.write(text)
        os.rename(tmp, path)


def _answer(qstate, res):
    qi = qstate.qinfo
    msg = DNSMessage(qi.qname_str, qi.qtype, qi.qclass, PKT_QR | PKT_RA | PKT_RD)
    rcode = RCODE_NOERROR
    if res.action == SINKHOLE:
        if qi.qtype == RR_TYPE_A and res.sinkhole4:
            msg.answer.append("%s 60 IN A %s" % (qi.qname_str, res.sinkhole4.decode()))
        elif qi.qtype == RR_TYPE_AAAA and res.sinkhole6:
            msg.answer.append("%s 60 IN AAAA %s" % (qi.qname_str, res.sinkhole6.decode()))
    elif res.action == REDIRECT and res.redirect:
        msg.answer.append("%s 60 IN CNAME %s." % (qi.qname_str, res.redirect.decode()))
    elif res.action != NODATA:
        rcode = RCODE_NXDOMAIN
    if not msg.set_return_msg(qstate):
        return False
    qstate.return_rcode = rcode
    qstate.return_msg.rep.security = 2  # sec_status_insecure: not validated
    return True


def operate(id, event, qstate, qdata):
    if event in (MODULE_EVENT_NEW, MODULE_EVENT_PASS):
        _write_stats()
        name = qstate.qinfo.qname_str.encode()
        res = Result()
        if _lib.breachd_dns_check(_h, name, len(name), ctypes.byref(res)) == BLOCK:
            if _answer(qstate, res):
                qstate.ext_state[id] = MODULE_FINISHED
                return True
        qstate.ext_state[id] = MODULE_WAIT_MODULE
        return True
    if event == MODULE_EVENT_MODDONE:
        qstate.ext_state[id] = MODULE_FINISHED
        return True
    qstate.ext_state[id] = MODULE_ERROR
    return True
